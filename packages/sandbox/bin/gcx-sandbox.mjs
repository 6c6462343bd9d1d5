#!/usr/bin/env node
// The `gcx-sandbox` bin of @gcx/sandbox (`npx @gcx/sandbox`): runs the compiled sandbox
// (`dist/bin.js`) on plain node. `#bin` is the package's own import (package.json "imports"):
// inside the repository, the `@gcx/source` condition with tsx loaded runs the TypeScript source.
await import("#bin")

#!/usr/bin/env node
// The `gcx` bin of @gcx/cli: runs the compiled, bundled CLI (`dist/gcx/bin.js`) on plain node.
// `#bin` is the package's own import (package.json "imports"): inside the repository, the
// `@gcx/source` condition with tsx loaded runs the TypeScript source instead (see the README).
import "#bin"

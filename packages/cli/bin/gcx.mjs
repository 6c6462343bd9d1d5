#!/usr/bin/env node
// The `gcx` bin of @gcx/cli: registers tsx, so that the TypeScript sources run as they are, then starts the CLI.
import { register } from "tsx/esm/api"

register()
await import("../src/bin.ts")

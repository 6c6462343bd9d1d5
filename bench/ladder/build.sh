#!/bin/sh
# Bundles the ladder's server and driver into build/ (plain JS: no tsx loader under callgrind).
cd "$(dirname "$0")" && for name in server driver; do
  ../../node_modules/.bin/esbuild "$name.ts" --bundle --platform=node --format=esm --target=node20 \
    --conditions=@gcx/source --log-level=warning --outfile="build/$name.mjs" \
    --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
done

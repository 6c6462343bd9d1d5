#!/bin/sh
# Bundles the ladder's server and driver into build/ (plain JS: no tsx loader under callgrind).
# The banner's createRequire is aliased: bundled modules may import createRequire themselves.
cd "$(dirname "$0")" && for name in server driver; do
  ../../node_modules/.bin/esbuild "$name.ts" --bundle --platform=node --format=esm --target=node22 \
    --conditions=@gcx/source --log-level=warning --outfile="build/$name.mjs" \
    --banner:js="import { createRequire as __ladderCreateRequire } from 'node:module'; const require = __ladderCreateRequire(import.meta.url);"
done

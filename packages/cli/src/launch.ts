/**
 * The entry of the installed `gcx` bin (`dist/gcx/bin.js`, made by `pnpm build`):
 * runs the bundled CLI beside it (`gcx.cjs`, the bundle of `bin.ts`) with V8's
 * code cache (`CodeCache`). Inside the repository, the bin runs `bin.ts` itself.
 */
import * as Path from "node:path"
import * as Url from "node:url"
import * as CodeCache from "./CodeCache.js"

CodeCache.run(Path.join(Path.dirname(Url.fileURLToPath(import.meta.url)), "gcx.cjs"))

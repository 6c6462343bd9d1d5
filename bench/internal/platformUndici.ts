/**
 * The undici that `@effect/platform-node` uses (not a dependency of the bench
 * itself), for the floors measured beside Effect's clients and servers.
 */
import { createRequire } from "node:module"

/** What the floors call of it. */
export interface Undici {
  readonly request: (
    url: string,
    options?: { readonly headers?: Record<string, string> }
  ) => Promise<{ readonly body: { readonly text: () => Promise<string> } }>
}

/** `@effect/platform-node`'s undici. */
export const undici = createRequire(import.meta.resolve("@effect/platform-node/NodeHttpClient"))("undici") as Undici

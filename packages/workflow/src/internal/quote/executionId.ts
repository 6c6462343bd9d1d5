/**
 * The execution id of a quote, computed synchronously: `effect/workflow`
 * derives it with WebCrypto's `subtle.digest`, a job on libuv's thread pool
 * and a promise per quote (in a CPU profile of the embedded runner, 0.7 ms of
 * the main thread per quote on a loaded machine). `effect/crypto` has no
 * synchronous digest, so this one stays on `node:crypto`.
 */
import * as Effect from "effect/Effect"
import * as Crypto from "node:crypto"
import { name } from "./definition.js"

/** What `effect/workflow` hashes: the workflow's name, with its length, and the idempotency key. */
const hashed = (requestId: string): string => `${name.length}:${name}:${requestId}`

/**
 * The execution id of the quote `requestId`, what the engine keys its rows by:
 * the same value as `QuoteWorkflow.executionId` (the first 16 bytes of the
 * SHA-256 of `8:GcxQuote:<requestId>`, in hex, as `effect/workflow` derives it
 * from the idempotency key).
 */
export const executionIdSync = (requestId: string): string =>
  Crypto.createHash("sha256").update(hashed(requestId), "utf8").digest().subarray(0, 16).toString("hex")

/** The execution id of the quote `requestId` (see `executionIdSync`). */
export const executionId = (requestId: string): Effect.Effect<string> => Effect.sync(() => executionIdSync(requestId))

/**
 * The signature of the gateway's webhooks, as Stripe signs its own: each
 * delivery carries `Gcx-Signature: t=<unix seconds>,v1=<hex>`, where the hex
 * is the HMAC-SHA-256, under the endpoint's secret, of the timestamp, a dot
 * and the raw body (`<t>.<body>`). The timestamp is signed with the body, so
 * a delivery recorded by a third party cannot be replayed once it falls out
 * of the receiver's tolerance (300 s by default).
 *
 * `verify` is for Node receivers: it checks the header against the raw body
 * (the bytes received, before any JSON parsing) in constant time, and accepts
 * a header with several `v1=` entries (one per secret, while a secret is
 * rotated). Receivers in other languages do the same in a few lines (see
 * `docs/gateway.md`).
 */
import * as Arr from "effect/Array"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"

/** The name of the signature's header. */
export const headerName = "Gcx-Signature"

/** The name of the header that carries the event id, for de-duplication. */
export const eventIdHeaderName = "Gcx-Event-Id"

/** How far, in seconds, the signed timestamp may be from the receiver's clock, either way: 300. */
export const defaultToleranceSeconds = 300

/** Why a signature was refused. */
export const Reason = Schema.Literals(["MalformedHeader", "TimestampOutsideTolerance", "NoMatchingSignature"])

/** Why a signature was refused. */
export type Reason = typeof Reason.Type

const messages: Record<Reason, string> = {
  MalformedHeader: `the ${headerName} header is missing or malformed (expected t=<unix seconds>,v1=<hex>)`,
  TimestampOutsideTolerance: `the ${headerName} timestamp is outside the tolerance (a replayed or delayed delivery)`,
  NoMatchingSignature: `no signature of the ${headerName} header matches the body (wrong secret, or the body changed)`
}

/** A delivery whose signature does not hold; never names the secret, the header or the body. */
export class WebhookSignatureError extends Schema.TaggedError<WebhookSignatureError>()("WebhookSignatureError", {
  reason: Reason
}) {
  override get message(): string {
    return messages[this.reason]
  }
}

/** A secret as given: plain text, or `Redacted`. */
export type Secret = string | Redacted.Redacted<string>

/** A body as received: its raw text or bytes. */
export type Body = string | Uint8Array

const secretText = (secret: Secret): string => Redacted.isRedacted(secret) ? Redacted.value(secret) : secret

const digest = (secret: Secret, body: Body, timestamp: number): Buffer =>
  Crypto.createHmac("sha256", secretText(secret)).update(`${timestamp}.`).update(body).digest()

/**
 * The `Gcx-Signature` header of `body` sent at `timestamp` (unix seconds):
 * `t=<timestamp>,v1=<hex HMAC-SHA-256(secret, "<timestamp>.<body>")>`, with
 * one `v1` per secret when given several (the new and the replaced one while
 * a secret is rotated), in their order.
 *
 * @example
 * ```ts
 * import * as WebhookSignature from "@gcx/gateway/WebhookSignature"
 *
 * const header = WebhookSignature.sign("whsec_test", `{"id":"evt_1"}`, 1_700_000_000)
 * console.log(header.startsWith("t=1700000000,v1=")) // true
 * ```
 */
export const sign = (secret: Secret | ReadonlyArray<Secret>, body: Body, timestamp: number): string =>
  [`t=${timestamp}`, ...Arr.ensure(secret).map((each) => `v1=${digest(each, body, timestamp).toString("hex")}`)]
    .join(",")

/** The longest header read: a few signatures fit many times over. */
const maxHeaderLength = 4096

/** A header's timestamp and its `v1` signatures (other schemes are ignored), if it has both. */
const parse = (
  header: string
): { readonly timestamp: number; readonly signatures: ReadonlyArray<Buffer> } | undefined => {
  if (header.length > maxHeaderLength) return undefined
  let timestamp: number | undefined
  const signatures: Array<Buffer> = []
  for (const item of header.split(",")) {
    const equals = item.indexOf("=")
    if (equals < 0) return undefined
    const key = item.slice(0, equals).trim()
    const value = item.slice(equals + 1).trim()
    if (key === "t") {
      if (timestamp !== undefined || !/^\d{1,12}$/.test(value)) return undefined
      timestamp = Number(value)
    } else if (key === "v1" && /^[0-9a-fA-F]{64}$/.test(value)) {
      signatures.push(Buffer.from(value, "hex"))
    }
  }
  return timestamp === undefined || signatures.length === 0 ? undefined : { timestamp, signatures }
}

/** What `verify` checks. */
export interface VerifyOptions {
  /** The `Gcx-Signature` header as received (absent: `MalformedHeader`). */
  readonly header: string | null | undefined
  /** The raw body as received, before any parsing. */
  readonly body: Body
  /** The endpoint's secret (`whsec_…`). */
  readonly secret: Secret
  /** How far the timestamp may be from `now`, either way, in seconds. Default 300. */
  readonly tolerance?: number | undefined
  /** The receiver's time in unix seconds. Default: the system clock. */
  readonly now?: number | undefined
}

/**
 * Checks a delivery's `Gcx-Signature` header against its raw body and the
 * endpoint's secret: its timestamp within `tolerance` of `now`, and one of
 * its `v1` signatures equal (in constant time) to the body's. Succeeds with
 * the signed timestamp, or fails with the reason.
 *
 * @example
 * ```ts
 * import * as WebhookSignature from "@gcx/gateway/WebhookSignature"
 * import * as Result from "effect/Result"
 *
 * const secret = "whsec_test"
 * const body = `{"id":"evt_1","type":"quote.completed"}`
 * const header = WebhookSignature.sign(secret, body, 1_700_000_000)
 *
 * const verified = WebhookSignature.verify({ header, body, secret, now: 1_700_000_010 })
 * console.log(Result.isSuccess(verified)) // true
 *
 * const tampered = WebhookSignature.verify({ header, body: body + " ", secret, now: 1_700_000_010 })
 * if (Result.isFailure(tampered)) console.log(tampered.failure.reason) // "NoMatchingSignature"
 * ```
 */
export const verify = (options: VerifyOptions): Result.Result<number, WebhookSignatureError> => {
  const parsed = typeof options.header === "string" ? parse(options.header) : undefined
  if (parsed === undefined) return Result.fail(new WebhookSignatureError({ reason: "MalformedHeader" }))
  const now = options.now ?? Math.floor(Date.now() / 1000)
  if (Math.abs(now - parsed.timestamp) > (options.tolerance ?? defaultToleranceSeconds)) {
    return Result.fail(new WebhookSignatureError({ reason: "TimestampOutsideTolerance" }))
  }
  const expected = digest(options.secret, options.body, parsed.timestamp)
  // every entry is compared, so that the time taken does not tell which one matched
  let matched = false
  for (const signature of parsed.signatures) {
    if (Crypto.timingSafeEqual(signature, expected)) matched = true
  }
  return matched
    ? Result.succeed(parsed.timestamp)
    : Result.fail(new WebhookSignatureError({ reason: "NoMatchingSignature" }))
}

/**
 * The settings of an API key (`ApiKeys.create`, `gcx serve keys create`):
 * its name, its rate limit and its webhook endpoints, and the overlap of a
 * webhook secret's rotation, checked before any I/O.
 * A refusal (`InvalidKeySettings`) names the setting and says why, and never
 * echoes a URL's credentials.
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** A setting of a new key is refused (before any I/O): `field` names it, `reason` says why. */
export class InvalidKeySettings extends Schema.TaggedError<InvalidKeySettings>()("InvalidKeySettings", {
  field: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.field} ${this.reason}`
  }
}

/** What a new key is made with. */
export interface CreateOptions {
  /** A name for people (1 to 100 characters, no control character). */
  readonly name: string
  /** Sustained requests a second, above 0. Default `defaults.ratePerSecond`. */
  readonly ratePerSecond?: number | undefined
  /** The bucket: requests allowed at once, a whole number of at least 1. Default `defaults.burst`. */
  readonly burst?: number | undefined
  /** Its webhook endpoints: https URLs, or http on loopback (`validateWebhookUrl`). */
  readonly webhooks?: ReadonlyArray<string> | undefined
}

/** The settings of a key made without them. */
export const defaults = { ratePerSecond: 20, burst: 40 } as const

const invalid = (field: string, reason: string) => Result.fail(new InvalidKeySettings({ field, reason }))

/** The hosts a webhook may be sent to over plain http: this machine's loopback. */
export const loopbackHosts: ReadonlyArray<string> = ["127.0.0.1", "localhost", "[::1]"]

/**
 * A webhook URL, checked before any I/O: https, or http on loopback only
 * (`loopbackHosts`: the deliveries carry the quotes' outcomes, never in clear
 * across a network), with a host and without credentials (a URL is listed by
 * `list`), at most 2048 characters. A refusal never echoes credentials.
 */
export const validateWebhookUrl = (url: string): Result.Result<URL, InvalidKeySettings> => {
  const field = "webhook"
  if (url.length > 2048) return invalid(field, "must be at most 2048 characters")
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    // not quoted: it may hold credentials that no URL parser found
    return invalid(field, "must be an http or https URL (this one does not parse)")
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    // the scheme only: the rest may hold credentials
    return invalid(field, `must be an http or https URL, got a '${parsed.protocol}' URL`)
  }
  if (parsed.username !== "" || parsed.password !== "") return invalid(field, "must not hold credentials")
  if (parsed.protocol === "http:" && !loopbackHosts.includes(parsed.hostname)) {
    return invalid(
      field,
      `must be https (http only on loopback: ${loopbackHosts.join(", ")}), got 'http://${parsed.host}'`
    )
  }
  return Result.succeed(parsed)
}

/** The settings of a new key, checked. */
export interface Settings {
  readonly name: string
  readonly ratePerSecond: number
  readonly burst: number
  readonly webhooks: ReadonlyArray<string>
}

/** The settings of a new key, checked before any I/O (defaults filled in). */
export const validate = (options: CreateOptions): Result.Result<Settings, InvalidKeySettings> => {
  const name = options.name.trim()
  if (name.length === 0 || name.length > 100) return invalid("name", "must be 1 to 100 characters")
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return invalid("name", "must not hold control characters")
  const ratePerSecond = options.ratePerSecond ?? defaults.ratePerSecond
  if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0) return invalid("rate", "must be a number above 0")
  const burst = options.burst ?? defaults.burst
  if (!Number.isInteger(burst) || burst < 1) return invalid("burst", "must be a whole number of at least 1")
  const webhooks = options.webhooks ?? []
  for (const url of webhooks) {
    const checked = validateWebhookUrl(url)
    if (Result.isFailure(checked)) return Result.fail(checked.failure)
  }
  return Result.succeed({ name, ratePerSecond, burst, webhooks })
}

/** How long a replaced webhook secret signs deliveries beside the new one, unless told otherwise: 24 hours. */
export const defaultSecretOverlap: Duration.Duration = Duration.hours(24)

/** The longest overlap of a replaced webhook secret: 7 days. */
export const maxSecretOverlap: Duration.Duration = Duration.days(7)

/**
 * The overlap of a webhook secret's rotation (`ApiKeys.rotateWebhookSecret`),
 * in whole milliseconds: `defaultSecretOverlap` when none is given, else a
 * duration from 0 to `maxSecretOverlap`.
 */
export const validateSecretOverlap = (
  overlap: Duration.Input | undefined
): Result.Result<number, InvalidKeySettings> => {
  // (Effect reads NaN milliseconds as zero: refused here, as a setting gone wrong)
  const duration = Number.isNaN(overlap) ? Option.none() : Duration.fromInput(overlap ?? defaultSecretOverlap)
  return Option.isNone(duration) || Duration.isNegative(duration.value) ||
      Duration.isGreaterThan(duration.value, maxSecretOverlap)
    ? invalid("overlap", "must be from 0 to 7 days")
    : Result.succeed(Math.ceil(Duration.toMillis(duration.value)))
}

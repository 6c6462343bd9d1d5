/**
 * `gcx serve keys create|list|revoke|rotate-secret` (flags in `commands/ServeKeys`): the API keys
 * of `gcx serve` (`@gcx/gateway/ApiKeys`), where `run/KeysStore` opens them, which a running `gcx
 * serve` shares: a key created or revoked here counts there within 5 s. The webhook secrets are
 * sealed with `GCX_DATA_KEY`. The settings are checked before the database is opened.
 */
import * as ApiKeys from "@gcx/gateway/ApiKeys"
import * as KeySettings from "@gcx/gateway/KeySettings"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as ExitCode from "../ExitCode.js"
import * as Text from "../Text.js"
import { KeysLocation, withKeys } from "./KeysStore.js"

/** What `gcx serve keys create` is given (`commands/ServeKeys`). */
export interface CreateFlags {
  readonly name: string
  readonly rate: Option.Option<number>
  readonly burst: Option.Option<number>
  readonly webhook: ReadonlyArray<string>
  readonly json: boolean
}

/** What `gcx serve keys revoke` is given. */
export interface RevokeFlags {
  readonly id: string
  readonly json: boolean
}

/** What `gcx serve keys rotate-secret` is given. */
export interface RotateSecretFlags {
  readonly id: string
  readonly overlap: Option.Option<number>
  readonly json: boolean
}

/** The line that follows the secrets `create` prints. */
export const notShownAgain =
  "Keep them now: the key and the webhook secrets are not shown again (only a hash and a sealed copy are kept)."

/** New secrets refused under a data key the deployment has not moved to: a usage error (the shell's keys). */
const stale = (error: ApiKeys.StaleDataKey) =>
  new ExitCode.CliError({ code: ExitCode.ExitCode.Usage, message: error.message })

/** A refused setting as a usage error naming its flag. */
const usage = (error: KeySettings.InvalidKeySettings) =>
  new ExitCode.CliError({ code: ExitCode.ExitCode.Usage, message: Text.safe(`--${error.message}`) })

const iso = (time: DateTime.Utc) => DateTime.formatIso(time).replace(/\.\d{3}Z$/, "Z")

/** The `create` command's handler: the key and the webhook secrets, once. */
export const create = (flags: CreateFlags) =>
  Effect.gen(function*() {
    const options = {
      name: flags.name,
      ratePerSecond: Option.getOrUndefined(flags.rate),
      burst: Option.getOrUndefined(flags.burst),
      webhooks: flags.webhook
    }
    // checked before the database is opened
    const settings = yield* Result.match(KeySettings.validate(options), {
      onFailure: (error) => Effect.fail(usage(error)),
      onSuccess: Effect.succeed
    })
    const [created, location] = yield* withKeys(
      Effect.all([Effect.flatMap(ApiKeys.ApiKeys, (keys) => keys.create(settings)), Effect.service(KeysLocation)]),
      true
    ).pipe(
      Effect.catchTags({
        InvalidKeySettings: (error) => Effect.fail(usage(error)),
        StaleDataKey: (error) => Effect.fail(stale(error))
      })
    )
    const { apiKey } = created
    if (flags.json) {
      yield* Console.log(Text.json({
        id: apiKey.id,
        name: apiKey.name,
        ratePerSecond: apiKey.ratePerSecond,
        burst: apiKey.burst,
        key: Redacted.value(created.key),
        webhooks: apiKey.webhooks.map((webhook) => ({
          id: webhook.id,
          url: webhook.url,
          secret: Redacted.value(webhook.secret)
        })),
        createdAt: iso(created.createdAt)
      }))
      return yield* Console.error(notShownAgain)
    }
    yield* Console.log(
      `created API key ${apiKey.id} '${Text.safe(apiKey.name)}' (${apiKey.ratePerSecond}/s, burst ${apiKey.burst}) ` +
        `in ${Text.safe(location)}`
    )
    yield* Console.log(`key: ${Redacted.value(created.key)}`)
    for (const webhook of apiKey.webhooks) {
      yield* Console.log(`webhook ${webhook.id} ${Text.safe(webhook.url)} secret: ${Redacted.value(webhook.secret)}`)
    }
    yield* Console.log(notShownAgain)
  })

/** A webhook URL as `list` shows it: without its query or fragment (`?…`), where a token may be. */
const listedUrl = (url: string): string => {
  const end = url.search(/[?#]/)
  return end < 0 ? url : `${url.slice(0, end)}?…`
}

/** The `list` command's handler: never a key or a secret (nor a webhook URL's query). */
export const list = (flags: { readonly json: boolean }) =>
  withKeys(Effect.gen(function*() {
    const keys = yield* (yield* ApiKeys.ApiKeys).list
    if (flags.json) {
      return yield* Console.log(Text.json({
        keys: keys.map((key) => ({
          id: key.id,
          name: key.name,
          ratePerSecond: key.ratePerSecond,
          burst: key.burst,
          webhooks: key.webhooks.map((webhook) => ({
            id: webhook.id,
            url: listedUrl(webhook.url),
            previousSecretUntil: Option.match(webhook.previousUntil, { onNone: () => null, onSome: iso })
          })),
          createdAt: iso(key.createdAt),
          revokedAt: Option.match(key.revokedAt, { onNone: () => null, onSome: iso })
        }))
      }))
    }
    const location = Text.safe(yield* KeysLocation)
    if (keys.length === 0) {
      return yield* Console.log(`no API keys in ${location} (make one with: gcx serve keys create --name <name>)`)
    }
    yield* Console.log(`API keys in ${location}:`)
    for (const key of keys) {
      const state = Option.match(key.revokedAt, { onNone: () => "active", onSome: (at) => `revoked ${iso(at)}` })
      const webhooks = key.webhooks.length === 0
        ? "no webhooks"
        : key.webhooks.map((webhook) =>
          `${webhook.id} ${listedUrl(webhook.url)}${
            Option.match(webhook.previousUntil, {
              onNone: () => "",
              onSome: (until) => ` (its replaced secret signs too until ${iso(until)})`
            })
          }`
        ).join(", ")
      yield* Console.log(Text.safe(
        `${key.id}  ${key.name}  ${key.ratePerSecond}/s burst ${key.burst}  created ${iso(key.createdAt)}  ${state}  ` +
          webhooks
      ))
    }
  }))

/** What an id of a key looks like (`key_` and 16 hex digits): only such an argument is quoted back. */
const keyIdPattern = /^key_[0-9a-f]{16}$/

/**
 * The `revoke` command's handler: by the key's id, or by the key itself (a
 * leaked key, whose id its holder may not know), never quoted back. An
 * unknown id is a usage error; so is a key that is unknown or revoked already.
 */
export const revoke = ({ id: given, json }: RevokeFlags) =>
  withKeys(Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    let id = given
    if (ApiKeys.keyPattern.test(given)) {
      const found = yield* Effect.option(keys.authenticate(Redacted.make(given)))
      if (Option.isNone(found)) {
        return yield* new ExitCode.CliError({
          code: ExitCode.ExitCode.Usage,
          message: `that API key is unknown or revoked already in ${
            Text.safe(yield* KeysLocation)
          } (gcx serve keys list shows the keys' ids)`
        })
      }
      id = found.value.id
    }
    const revocation = yield* keys.revoke(id)
    if (revocation === "unknown") {
      const named = keyIdPattern.test(id) ? `the id '${id}'` : "that id (an id is key_ and 16 hex digits)"
      return yield* new ExitCode.CliError({
        code: ExitCode.ExitCode.Usage,
        message: `no API key has ${named} in ${Text.safe(yield* KeysLocation)}: gcx serve keys list shows the ids`
      })
    }
    if (json) return yield* Console.log(Text.json({ id, revoked: true, already: revocation === "alreadyRevoked" }))
    yield* Console.log(
      revocation === "revoked"
        ? `revoked API key ${id}: every gateway refuses it within ${defaultCacheSeconds} s`
        : `API key ${id} was already revoked`
    )
  }))

/** What an id of a webhook endpoint looks like (`wh_` and 16 hex digits): only such an argument is quoted back. */
const webhookIdPattern = /^wh_[0-9a-f]{16}$/

/**
 * The `rotate-secret` command's handler: the endpoint's new secret, once,
 * and until when the replaced one still signs. An unknown id is a usage error.
 */
export const rotateSecret = (flags: RotateSecretFlags) =>
  withKeys(Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    const overlap = Option.map(flags.overlap, (hours) => Duration.hours(hours))
    const rotated = yield* keys.rotateWebhookSecret(flags.id, { overlap: Option.getOrUndefined(overlap) }).pipe(
      Effect.catchTags({
        InvalidKeySettings: (error) => Effect.fail(usage(error)),
        StaleDataKey: (error) => Effect.fail(stale(error))
      })
    )
    if (Option.isNone(rotated)) {
      const named = webhookIdPattern.test(flags.id)
        ? `the id '${flags.id}'`
        : "that id (an id is wh_ and 16 hex digits)"
      return yield* new ExitCode.CliError({
        code: ExitCode.ExitCode.Usage,
        message: `no webhook endpoint has ${named} in ${
          Text.safe(yield* KeysLocation)
        }: gcx serve keys list shows the ids`
      })
    }
    const { endedEarlierOverlap, endpoint, keyId, keyRevoked, previousUntil } = rotated.value
    if (flags.json) {
      yield* Console.log(Text.json({
        id: endpoint.id,
        keyId,
        url: listedUrl(endpoint.url),
        secret: Redacted.value(endpoint.secret),
        previousUntil: Option.match(previousUntil, { onNone: () => null, onSome: iso }),
        endedEarlierOverlap
      }))
      return yield* Console.error(secretNotShownAgain)
    }
    yield* Console.log(
      `webhook ${endpoint.id} ${Text.safe(listedUrl(endpoint.url))} of API key ${keyId} secret: ${
        Redacted.value(endpoint.secret)
      }`
    )
    if (keyRevoked) {
      yield* Console.log(
        `API key ${keyId} is revoked: the outcomes of the quotes it submitted are still delivered to this endpoint`
      )
    }
    if (endedEarlierOverlap) {
      yield* Console.log("the secret an earlier rotation replaced, which still signed, no longer signs deliveries")
    }
    yield* Console.log(Option.match(previousUntil, {
      onNone: () => "the replaced secret no longer signs deliveries",
      onSome: (until) =>
        `the replaced secret signs deliveries too until ${iso(until)}: give the receiver the new one before then`
    }))
    yield* Console.log(secretNotShownAgain)
  }))

/** The line that follows the secret `rotate-secret` prints. */
export const secretNotShownAgain = "Keep it now: the secret is not shown again (only a sealed copy is kept)."

/** How long a gateway may still accept a revoked key (its cache). */
const defaultCacheSeconds = Duration.toSeconds(ApiKeys.defaultCacheTtl)

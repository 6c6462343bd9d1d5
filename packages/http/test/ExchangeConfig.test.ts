import { describe, expect, it } from "@effect/vitest"
import { ConfigProblem } from "@gcx/core"
import { ExchangeConfig, RetryPolicy } from "@gcx/http"
import { Config, ConfigProvider, Duration, Effect, Option, Redacted, Result } from "effect"

const complete: Record<string, string> = {
  GCX_ENV: "production",
  GCX_BASE_URL: "https://api.example.test/",
  GCX_AUTH_URL: "https://auth.example.test",
  GCX_CLIENT_ID: "partner",
  GCX_CLIENT_SECRET: "partner-secret",
  GCX_API_KEY: "partner-api-key"
}

const load = (variables: Record<string, string>, tuning?: ExchangeConfig.Tuning) =>
  ExchangeConfig.ExchangeConfig.pipe(
    Effect.provide(ExchangeConfig.layerConfig(tuning)),
    // Empty values kept, as a shell's `GCX_STAGE=` (Effect 4's provider reads them as unset by default)
    Effect.provideService(
      ConfigProvider.ConfigProvider,
      ConfigProvider.fromEnv({ env: variables, preserveEmptyStrings: true })
    ),
    Effect.result
  )

const without = (name: string) => Object.fromEntries(Object.entries(complete).filter(([key]) => key !== name))

/** The variable names a ConfigError points at, with its messages. */
const described = (error: Config.ConfigError): string => String(error)

describe("ExchangeConfig", () => {
  it.effect("layerConfig reads the GCX_* variables", () =>
    Effect.gen(function*() {
      const config = Result.getOrThrow(yield* load({ ...complete, GCX_SCOPE: "rs/exchange/full-access" }))
      expect(config.environment).toBe("production")
      expect(config.baseUrl).toBe("https://api.example.test")
      expect(config.authUrl).toBe("https://auth.example.test")
      expect(config.stage).toEqual(Option.some("prod"))
      expect(config.scope).toEqual(Option.some("rs/exchange/full-access"))
      expect(config.authStyle).toBe("body")
      expect(config.clientId).toBe("partner")
      expect(Redacted.value(config.clientSecret)).toBe("partner-secret")
      expect(Redacted.value(config.apiKey)).toBe("partner-api-key")
      expect(config.requestTimeout).toEqual(ExchangeConfig.defaultRequestTimeout)
      expect(config.retry).toEqual(RetryPolicy.defaults)
    }))

  it.effect("secrets stay redacted when the configuration is printed", () =>
    Effect.gen(function*() {
      const config = Result.getOrThrow(yield* load(complete))
      const printed = `${JSON.stringify(config)} ${String(config.clientSecret)} ${String(config.apiKey)}`
      expect(printed).not.toContain("partner-secret")
      expect(printed).not.toContain("partner-api-key")
    }))

  it.effect.each(
    ["GCX_BASE_URL", "GCX_AUTH_URL", "GCX_CLIENT_ID", "GCX_CLIENT_SECRET", "GCX_API_KEY"]
  )("a missing %s fails with a ConfigError that names it", (name) =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(load(without(name)), Effect.fromResult))
      expect(error).toBeInstanceOf(Config.ConfigError)
      expect(ExchangeConfig.missingVariables(error)).toEqual([name])
      expect(described(error)).toContain(name)
    }))

  it.effect.each([
    { name: "GCX_ENV", value: "staging" },
    { name: "GCX_AUTH_STYLE", value: "digest" },
    { name: "GCX_BASE_URL", value: "api.example.test" },
    { name: "GCX_AUTH_URL", value: "ftp://auth.example.test" },
    { name: "GCX_STAGE", value: "a/b" },
    { name: "GCX_SCOPE", value: " " },
    { name: "GCX_CLIENT_ID", value: " " },
    { name: "GCX_CLIENT_SECRET", value: "" },
    { name: "GCX_API_KEY", value: " " }
  ])("a malformed $name fails with a ConfigError that names it", ({ name, value }) =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(load({ ...complete, [name]: value }), Effect.fromResult))
      expect(error).toBeInstanceOf(Config.ConfigError)
      expect(ExchangeConfig.missingVariables(error)).toEqual([])
      expect(described(error)).toContain(name)
    }))

  it.effect("production URLs are never guessed: without GCX_BASE_URL and GCX_AUTH_URL it fails", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(
        load({
          GCX_ENV: "production",
          GCX_CLIENT_ID: "partner",
          GCX_CLIENT_SECRET: "s",
          GCX_API_KEY: "k"
        }),
        Effect.fromResult
      ))
      expect(described(error)).toContain("GCX_BASE_URL")
      expect(described(error)).toContain("GCX_AUTH_URL")
      expect(ExchangeConfig.missingVariables(error)).toEqual(["GCX_BASE_URL", "GCX_AUTH_URL"])
    }))

  it.effect("the stage defaults by environment, and an empty GCX_STAGE turns it off", () =>
    Effect.gen(function*() {
      const stage = (variables: Record<string, string>) =>
        load(variables).pipe(Effect.map(Result.map((config) => config.stage)), Effect.map(Result.getOrThrow))
      expect(yield* stage(complete)).toEqual(Option.some("prod"))
      expect(yield* stage({ ...complete, GCX_ENV: "sandbox" })).toEqual(Option.some("sandbox"))
      expect(yield* stage({ ...complete, GCX_ENV: "custom" })).toEqual(Option.none())
      expect(yield* stage(without("GCX_ENV"))).toEqual(Option.none())
      expect(yield* stage({ ...complete, GCX_STAGE: "" })).toEqual(Option.none())
      expect(yield* stage({ ...complete, GCX_STAGE: "v2-stage" })).toEqual(Option.some("v2-stage"))
    }))

  it.effect("with Effect 4's default provider an empty variable is unset: GCX_STAGE=/ turns the stage off", () =>
    Effect.gen(function*() {
      const read = (variables: Record<string, string>) =>
        ExchangeConfig.ExchangeConfig.pipe(
          Effect.provide(ExchangeConfig.layerConfig()),
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: variables }))
        )
      expect((yield* read({ ...complete, GCX_STAGE: "" })).stage).toEqual(Option.some("prod"))
      expect((yield* read({ ...complete, GCX_STAGE: "/" })).stage).toEqual(Option.none())
      const error = yield* Effect.flip(read({ ...complete, GCX_CLIENT_SECRET: "" }))
      expect(ExchangeConfig.missingVariables(error)).toEqual(["GCX_CLIENT_SECRET"])
    }))

  it.effect("GCX_AUTH_STYLE selects the basic style", () =>
    Effect.gen(function*() {
      const config = Result.getOrThrow(yield* load({ ...complete, GCX_AUTH_STYLE: "basic" }))
      expect(config.authStyle).toBe("basic")
    }))

  it.effect("tuning overrides the timeout and the retry settings", () =>
    Effect.gen(function*() {
      const config = Result.getOrThrow(
        yield* load(complete, { requestTimeout: "2 seconds", retry: { maxAttempts: 2, budget: { capacity: 3 } } })
      )
      expect(config.requestTimeout).toEqual(Duration.seconds(2))
      expect(config.retry.maxAttempts).toBe(2)
      expect(config.retry.budget).toEqual({ capacity: 3, refillPerSecond: RetryPolicy.defaults.budget.refillPerSecond })
      expect(config.retry.baseDelay).toEqual(RetryPolicy.defaults.baseDelay)
    }))

  it("make names the malformed option", () => {
    const options: ExchangeConfig.Options = {
      baseUrl: "http://127.0.0.1:8080",
      authUrl: "http://127.0.0.1:8081",
      clientId: "partner",
      clientSecret: Redacted.make("secret"),
      apiKey: "key"
    }
    const valid = Result.getOrThrow(ExchangeConfig.make(options))
    expect(valid.environment).toBe("custom")
    expect(valid.stage).toEqual(Option.none())
    expect(Redacted.isRedacted(valid.apiKey)).toBe(true)
    const refuse = (override: Partial<ExchangeConfig.Options>) =>
      Result.match(ExchangeConfig.make({ ...options, ...override }), {
        onFailure: described,
        onSuccess: () => "accepted"
      })
    expect(refuse({ baseUrl: "not a url" })).toContain("baseUrl")
    expect(refuse({ authUrl: "http://user:pw@host" })).toContain("authUrl")
    expect(refuse({ stage: "a b" })).toContain("stage")
    expect(refuse({ requestTimeout: 0 })).toContain("requestTimeout")
    expect(refuse({ retry: { maxAttempts: 0 } })).toContain("retry.maxAttempts")
    expect(refuse({ retry: { budget: { capacity: -1 } } })).toContain("retry.budget.capacity")
    expect(refuse({ stage: "/prod/" })).toBe("accepted")
  })

  it.effect("ConfigProblem lists each missing and malformed variable with its message, never the value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(
        load({ ...without("GCX_AUTH_URL"), GCX_BASE_URL: "ftp://secret-host.test", GCX_AUTH_STYLE: "digest" }),
        Effect.fromResult
      ))
      expect(ConfigProblem.fromError(error)).toEqual([
        { path: "GCX_BASE_URL", kind: "invalid", message: "GCX_BASE_URL must be an http or https URL" },
        { path: "GCX_AUTH_URL", kind: "missing", message: "GCX_AUTH_URL is not set" },
        { path: "GCX_AUTH_STYLE", kind: "invalid", message: "GCX_AUTH_STYLE must be one of \"body\", \"basic\"" }
      ])
      expect(ExchangeConfig.missingVariables(error)).toEqual(["GCX_AUTH_URL"])
    }))
})

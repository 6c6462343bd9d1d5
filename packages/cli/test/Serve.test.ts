/**
 * `gcx serve`'s wiring (`run/Serve`), in process: the embedded deployment on
 * SQLite in a temporary file, the embedded sandbox (`--embedded`), a free
 * port, the address line, and a quote over real HTTP. The API keys, rate
 * limits and event log are stand-ins given to `run` (their real layers are
 * the keys and events engineers', wired at merge); the gateway itself is
 * tested in `@gcx/gateway`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ApiKeys from "@gcx/gateway/ApiKeys"
import * as RateLimit from "@gcx/gateway/RateLimit"
import { TestData } from "@gcx/sandbox"
import { CardCipher, EventLog } from "@gcx/workflow"
import { ConfigProvider, Console, Effect, Fiber, Layer, Option, Redacted, Result } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Serve from "../src/run/Serve.js"
import { connectionFlags } from "./helpers.js"

const presented = `gcx_sk_${"k".repeat(43)}`

/** One caller, no rate limit, an event log with nothing in it. */
const standIns = Layer.mergeAll(
  Layer.mock(ApiKeys.ApiKeys, {
    authenticate: (key) =>
      Redacted.value(key) === presented
        ? Effect.succeed({ id: "key_1", name: "one", ratePerSecond: 20, burst: 40, webhooks: [] })
        : Effect.fail(new ApiKeys.UnknownApiKey()),
    find: () => Effect.succeedNone
  }),
  Layer.succeed(RateLimit.RateLimit, RateLimit.RateLimit.of({ take: () => Effect.void })),
  Layer.succeed(EventLog.EventLog, EventLog.EventLog.of({ read: () => Effect.succeed([]) } as never))
)

const connection = connectionFlags({ embedded: true })

describe("gcx serve", () => {
  it.live("embedded: prints its address, serves /healthz and takes a quote; the database is GCX_DATABASE_FILE", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.acquireRelease(
        Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-serve-test-"))),
        (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
      )
      const filename = Path.join(directory, "gcx.db")
      const printed: Array<string> = []
      const base = yield* Console.Console
      const dataKey = CardCipher.generateKey()
      const serve = (keys: Record<string, string>) =>
        Serve.run({ port: Option.some(0), host: Option.none(), connection }, standIns).pipe(
          Effect.provideService(Console.Console, { ...base, log: (...values) => printed.push(values.join(" ")) }),
          Effect.provideService(
            ConfigProvider.ConfigProvider,
            ConfigProvider.fromEnvRecord({ ...keys, GCX_DATABASE_FILE: filename, GCX_SANDBOX_TIME_SCALE: "0.01" })
          )
        )
      const fiber = yield* serve({ GCX_DATA_KEY: dataKey }).pipe(Effect.forkScoped)
      let line: string | undefined
      for (let attempt = 0; attempt < 300 && line === undefined; attempt++) {
        yield* Effect.sleep("20 millis")
        line = printed.find((text) => text.startsWith("gcx serve "))
      }
      expect(line).toMatch(new RegExp(`^gcx serve http://127\\.0\\.0\\.1:\\d+ \\(embedded on ${filename};`))
      const url = line!.split(" ")[2]!
      const health = yield* Effect.promise(() => fetch(`${url}/healthz`).then((response) => response.json()))
      expect(health).toEqual({ status: "ok" })
      const posted = yield* Effect.promise(() =>
        fetch(`${url}/v1/quotes`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${presented}`,
            "idempotency-key": "one",
            "content-type": "application/json"
          },
          body: JSON.stringify({
            cardNumber: TestData.Cards.instant,
            pinNumber: TestData.pin,
            productLineId: TestData.defaultProductLineId
          })
        }).then(async (response) => ({ status: response.status, body: await response.json() }))
      )
      expect(posted.status).toBe(202)
      expect(posted.body.status).toBe("pending")
      expect(Fs.existsSync(filename)).toBe(true)
      yield* Fiber.interrupt(fiber)

      // restarted with another data key (neither GCX_DATA_KEY nor GCX_DATA_KEY_PREVIOUS): refused, exit 2, one line
      const otherKey = CardCipher.generateKey()
      const refused = yield* Effect.flip(serve({ GCX_DATA_KEY: otherKey }).pipe(Effect.timeout("30 seconds")))
      const keyId = Result.getOrThrow(CardCipher.parseKey(dataKey)).id
      expect(refused).toMatchObject({ _tag: "CliError", code: 2 })
      expect(refused.message).toBe(
        `gcx serve: this database's quotes were recorded under data key ${keyId}, which is neither GCX_DATA_KEY ` +
          "nor GCX_DATA_KEY_PREVIOUS: start with that key (or set it as GCX_DATA_KEY_PREVIOUS to rotate)"
      )
      expect(refused.message).not.toContain(dataKey)
      expect(refused.message).not.toContain(otherKey)
    }).pipe(Effect.scoped))
})

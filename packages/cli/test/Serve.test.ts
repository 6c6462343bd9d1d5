/**
 * `gcx serve`'s wiring (`run/Serve`), in process: the embedded deployment on
 * SQLite in a temporary file over a sandbox in the test process, a free port,
 * the address line, and a quote over real HTTP; with `--embedded`, the
 * quotes in the embedded sandbox's own file, never in `GCX_DATABASE_FILE`. The API keys, rate
 * limits and event log are stand-ins given to `run` (their real layers are
 * the keys and events engineers', wired at merge); the gateway itself is
 * tested in `@gcx/gateway`.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import * as ApiKeys from "@gcx/gateway/ApiKeys"
import * as RateLimit from "@gcx/gateway/RateLimit"
import { Sandbox, TestData } from "@gcx/sandbox"
import { CardCipher, EventLog } from "@gcx/workflow"
import { ConfigProvider, Console, Effect, Fiber, Layer, Option, Redacted, Result } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as DurableDeployment from "../src/DurableDeployment.js"
import * as Serve from "../src/run/Serve.js"
import { connectionFlags, envFor, sandbox } from "./helpers.js"

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

/** A fresh folder, removed with the scope, and the database file in it. */
const databaseFile = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-serve-test-"))),
    (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
  ),
  (directory) => Path.join(directory, "gcx.db")
)

/** `gcx serve` with `env` and the stand-ins, its lines printed to `printed`. */
const serving = (connection: ReturnType<typeof connectionFlags>, env: Record<string, string>, printed: Array<string>) =>
  Effect.flatMap(
    Console.Console,
    (base) =>
      Serve.run({ port: Option.some(0), host: Option.none(), connection }, standIns).pipe(
        Effect.provideService(Console.Console, { ...base, log: (...values) => printed.push(values.join(" ")) }),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
      )
  )

/** The address line `gcx serve` printed, waited for (bounded). */
const addressLine = (printed: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    let line: string | undefined
    for (let attempt = 0; attempt < 300 && line === undefined; attempt++) {
      yield* Effect.sleep("20 millis")
      line = printed.find((text) => text.startsWith("gcx serve "))
    }
    return line
  })

describe("gcx serve --embedded", () => {
  it.live("keeps its quotes in a file of their own: the quotes of GCX_DATABASE_FILE are never resumed on a sandbox", () =>
    Effect.gen(function*() {
      const filename = yield* databaseFile
      const printed: Array<string> = []
      const env = { GCX_DATA_KEY: CardCipher.generateKey(), GCX_DATABASE_FILE: filename }
      const fiber = yield* serving(connectionFlags({ embedded: true }), env, printed).pipe(Effect.forkScoped)
      const line = yield* addressLine(printed)
      expect(line).toMatch(
        new RegExp(
          `^gcx serve http://127\\.0\\.0\\.1:\\d+ \\(embedded on ${
            DurableDeployment.sandboxDatabaseFile(filename)
          } \\(the embedded sandbox's quotes\\);`
        )
      )
      const health = yield* Effect.promise(() =>
        fetch(`${line!.split(" ")[2]}/healthz`).then((response) => response.status)
      )
      expect(health).toBe(200)
      expect(Fs.existsSync(filename)).toBe(false)
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.scoped))
})

layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("gcx serve", (it) => {
  it.effect("embedded: prints its address, serves /healthz and takes a quote; the database is GCX_DATABASE_FILE", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const filename = yield* databaseFile
      const printed: Array<string> = []
      const dataKey = CardCipher.generateKey()
      const serve = (keys: Record<string, string>) =>
        serving(connectionFlags(), { ...envFor(server), ...keys, GCX_DATABASE_FILE: filename }, printed)
      const fiber = yield* serve({ GCX_DATA_KEY: dataKey }).pipe(Effect.forkScoped)
      const line = yield* addressLine(printed)
      expect(line).toMatch(new RegExp(`^gcx serve http://127\\.0\\.0\\.1:\\d+ \\(embedded on ${filename};`))
      // the keys it reads, beside the database (where `gcx serve keys` writes them)
      expect(line).toContain(`; API keys in ${Path.join(Path.dirname(filename), "gateway-keys.db")};`)
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

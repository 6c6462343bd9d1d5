/**
 * `gcx serve keys create|list|revoke`, each run as a separate process on a database of its own:
 * the embedded gateway's keys file (`GCX_GATEWAY_KEYS_FILE`, beside `GCX_DATABASE_FILE`) and a
 * throwaway PostgreSQL (`GCX_DATABASE_URL`). The key and the webhook secrets are printed once, by
 * `create`, and found nowhere after: not in `list`, not in the database. Embedded, the keys are
 * managed while a real `gcx serve --embedded` process runs, which takes a new key at once and
 * refuses a revoked one within its 5 s cache.
 */
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { TestData } from "@gcx/sandbox"
import { CardCipher } from "@gcx/workflow"
import { Effect, Fiber, Layer, Result } from "effect"
import { SqlClient } from "effect/sql"
import type * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as TestPg from "../../workflow/test/utils/postgres.js"
import * as DurableDeployment from "../src/DurableDeployment.js"
import { notShownAgain } from "../src/run/ServeKeys.js"
import { entries, expectNoSecrets, expectOneErrorLine, lines, pin, spawn } from "./helpers.js"

const entry = entries.bin

const dataKey = CardCipher.generateKey()

/** Runs `gcx serve keys <args>` with `env` (and the data key), checking that it printed no secret of the tests. */
const keys = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  spawn(process.execPath, ["--import", "tsx", entry, "serve", "keys", ...args], {
    env: { GCX_DATA_KEY: dataKey, ...env }
  }).pipe(Effect.tap((output) => Effect.sync(() => expectNoSecrets(output))))

/** A temporary folder for an embedded database, removed with the scope. */
const folder = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-serve-keys-"))),
  (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
)

/** Every file of a folder, as latin1 text. */
const filesOf = (directory: string) =>
  Fs.readdirSync(directory).map((file) => Fs.readFileSync(Path.join(directory, file)).toString("latin1")).join("\n")

/**
 * create → list → revoke → list on the database of `env`, which they name (`location`); returns the key and the
 * secrets it printed.
 */
const lifecycle = (env: Record<string, string>, location: string) =>
  Effect.gen(function*() {
    const created = yield* keys([
      "create",
      "--name",
      "checkout",
      "--rate",
      "5",
      "--burst",
      "10",
      "--webhook",
      "https://shop.example/hooks/gcx",
      "--webhook",
      "http://127.0.0.1:8999/hook?token=s3cr3t-query"
    ], env)
    expect(created.code, created.stderr).toBe(0)
    const out = lines(created.stdout)
    expect(out[0]).toMatch(/^created API key key_[0-9a-f]{16} 'checkout' \(5\/s, burst 10\) in /)
    expect(out[0]!.endsWith(` in ${location}`), out[0]).toBe(true)
    const id = /key_[0-9a-f]{16}/.exec(out[0]!)![0]
    const key = /^key: (gcx_sk_[A-Za-z0-9_-]{43})$/.exec(out[1]!)?.[1]
    assert(key !== undefined, created.stdout)
    const secrets = out.slice(2, 4).map((line) => /secret: (whsec_[A-Za-z0-9_-]{43})$/.exec(line)?.[1])
    expect(secrets.every((secret) => secret !== undefined), created.stdout).toBe(true)
    expect(out.slice(2, 4).join("\n")).toContain("https://shop.example/hooks/gcx")
    expect(out.at(-1)).toContain("not shown again")
    // loopback over http: no warning
    expect(created.stderr).toBe("")

    const listed = yield* keys(["list"], env)
    expect(listed.code, listed.stderr).toBe(0)
    expect(lines(listed.stdout)[0]).toBe(`API keys in ${location}:`)
    expect(listed.stdout).toContain(`${id}  checkout  5/s burst 10  created `)
    expect(listed.stdout).toContain("active")
    expect(listed.stdout).toContain("https://shop.example/hooks/gcx")
    const listedJson = yield* keys(["list", "--json"], env)
    const [entryJson] = JSON.parse(listedJson.stdout).keys
    expect(entryJson).toMatchObject({ id, name: "checkout", ratePerSecond: 5, burst: 10, revokedAt: null })
    // a URL's query is not shown: a token may be in it
    expect(`${listed.stdout}${listedJson.stdout}`).not.toContain("s3cr3t-query")
    expect(entryJson.webhooks.map((webhook: { url: string }) => webhook.url).sort()).toEqual([
      "http://127.0.0.1:8999/hook?…",
      "https://shop.example/hooks/gcx"
    ])
    for (const secret of [key, ...secrets as Array<string>]) {
      expect(`${listed.stdout}${listed.stderr}${listedJson.stdout}`).not.toContain(secret)
    }

    const revoked = yield* keys(["revoke", id], env)
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(revoked.stdout).toBe(`revoked API key ${id}: every gateway refuses it within 5 s\n`)
    const again = yield* keys(["revoke", id, "--json"], env)
    expect(JSON.parse(again.stdout)).toEqual({ id, revoked: true, already: true })
    const after = yield* keys(["list"], env)
    expect(after.stdout).toMatch(new RegExp(`${id} .* revoked \\d{4}-\\d\\d-\\d\\dT`))
    const unknown = yield* keys(["revoke", "key_0000000000000000"], env)
    expect(unknown.code).toBe(2)
    const line = expectOneErrorLine(unknown.stderr, "no API key has the id 'key_0000000000000000'", "--help)")
    // one hint, not two
    expect(line.match(/\(see /g)).toHaveLength(1)
    // by the key itself (a leaked one): revoked by its id, the key never printed back
    const leaked = yield* keys(["create", "--name", "leaked"], env)
    const leakedId = /key_[0-9a-f]{16}/.exec(leaked.stdout)![0]
    const leakedKey = /^key: (gcx_sk_[A-Za-z0-9_-]{43})$/m.exec(leaked.stdout)![1]!
    const byKey = yield* keys(["revoke", leakedKey], env)
    expect(byKey.code, byKey.stderr).toBe(0)
    expect(byKey.stdout).toBe(`revoked API key ${leakedId}: every gateway refuses it within 5 s\n`)
    for (const again of [leakedKey, key!]) {
      const refused = yield* keys(["revoke", again], env)
      expect(refused.code).toBe(2)
      expectOneErrorLine(refused.stderr, "that API key is unknown or revoked already")
      expect(`${refused.stdout}${refused.stderr}`).not.toContain(again)
    }
    const mistyped = yield* keys(["revoke", `${leakedKey.slice(0, 20)}`], env)
    expect(mistyped.code).toBe(2)
    expect(mistyped.stderr).toContain("no API key has that id")
    expect(mistyped.stderr).not.toContain(leakedKey.slice(0, 20))
    return { key, secrets: secrets as Array<string> }
  })

describe("gcx serve keys", () => {
  it.effect(
    "embedded: create prints the key and the secrets once; list shows neither; revoke; the file holds neither",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const { key, secrets } = yield* lifecycle(
          { GCX_DATABASE_FILE: Path.join(directory, "gcx.db") },
          Path.resolve(directory, "gateway-keys.db")
        )
        const files = filesOf(directory)
        expect(files).toContain("https://shop.example/hooks/gcx")
        for (const sentinel of [key, ...secrets]) expect(files).not.toContain(sentinel)
      }).pipe(Effect.scoped),
    120_000
  )

  it.effect(
    "rotate-secret prints the endpoint's new secret once and until when the replaced one signs; list shows the ids",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const env = { GCX_DATABASE_FILE: Path.join(directory, "gcx.db") }
        const created = yield* keys(
          ["create", "--name", "shop", "--webhook", "https://shop.example/h?token=q-s3cr3t"],
          env
        )
        expect(created.code, created.stderr).toBe(0)
        const webhookId = /webhook (wh_[0-9a-f]{16}) /.exec(created.stdout)![1]!
        const firstSecret = /secret: (whsec_\S+)/.exec(created.stdout)![1]!
        const listed = yield* keys(["list"], env)
        expect(listed.stdout).toContain(`${webhookId} https://shop.example/h`)

        const rotated = yield* keys(["rotate-secret", webhookId], env)
        expect(rotated.code, rotated.stderr).toBe(0)
        const out = lines(rotated.stdout)
        expect(out[0]).toMatch(
          new RegExp(
            `^webhook ${webhookId} https://shop\\.example/h\\?… of API key key_[0-9a-f]{16} secret: whsec_[A-Za-z0-9_-]{43}$`
          )
        )
        expect(out[0]).not.toContain(firstSecret)
        // the URL's query is not shown (a token may be in it), as in the list
        expect(rotated.stdout).not.toContain("q-s3cr3t")
        expect(out[1]).toMatch(/^the replaced secret signs deliveries too until \d{4}-\d\d-\d\dT[\d:]+Z: give/)
        expect(out.at(-1)).toContain("not shown again")
        const second = /secret: (whsec_\S+)/.exec(out[0]!)![1]!
        // the list says until when the replaced secret signs
        expect((yield* keys(["list"], env)).stdout).toMatch(
          new RegExp(`${webhookId} https://shop\\.example/h\\?… \\(its replaced secret signs too until \\d{4}-`)
        )

        // a leaked secret: no overlap; --json
        const leaked = yield* keys(["rotate-secret", webhookId, "--overlap", "0", "--json"], env)
        expect(leaked.code, leaked.stderr).toBe(0)
        const json = JSON.parse(leaked.stdout)
        expect(json).toMatchObject({
          id: webhookId,
          url: "https://shop.example/h?…",
          previousUntil: null,
          endedEarlierOverlap: true
        })
        expect(json.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
        expect(leaked.stderr).toContain("not shown again")
        const text = yield* keys(["rotate-secret", webhookId, "--overlap", "0"], env)
        expect(lines(text.stdout)[1]).toBe("the replaced secret no longer signs deliveries")
        // from another folder: no keys file there; it says where it looked, and makes none
        const elsewhere = yield* folder
        const lost = yield* keys(["rotate-secret", webhookId], { GCX_DATABASE_FILE: Path.join(elsewhere, "gcx.db") })
        expect(lost.code).toBe(2)
        expectOneErrorLine(lost.stderr, `no keys file at ${Path.resolve(elsewhere, "gateway-keys.db")}`)
        expect(Fs.readdirSync(elsewhere)).toEqual([])

        // refused before the database: an overlap past 7 days, an unknown or malformed id
        const tooLong = yield* keys(["rotate-secret", webhookId, "--overlap", "169"], env)
        expect(tooLong.code).toBe(2)
        expectOneErrorLine(tooLong.stderr, "--overlap")
        const unknown = yield* keys(["rotate-secret", "wh_0000000000000000"], env)
        expect(unknown.code).toBe(2)
        expectOneErrorLine(
          unknown.stderr,
          `no webhook endpoint has the id 'wh_0000000000000000' in ${Path.resolve(directory, "gateway-keys.db")}`
        )
        const malformed = yield* keys(["rotate-secret", "whsec_not-an-id"], env)
        expect(malformed.code).toBe(2)
        expect(malformed.stderr).not.toContain("whsec_not-an-id")
        // a shell with the keys the wrong way round (the deployment's as the previous one): refused, nothing moved
        const swapped = yield* keys(["rotate-secret", webhookId], {
          ...env,
          GCX_DATA_KEY: CardCipher.generateKey(),
          GCX_DATA_KEY_PREVIOUS: dataKey
        })
        expect(swapped.code).toBe(2)
        expectOneErrorLine(swapped.stderr, "webhook secrets are sealed under GCX_DATA_KEY_PREVIOUS")
        expect((yield* keys(["list"], env)).code).toBe(0)
        // a revoked key's endpoint still gets the outcomes of its quotes: rotated, with a note saying so
        const keyId = /API key (key_[0-9a-f]{16})/.exec(out[0]!)![1]!
        expect((yield* keys(["revoke", keyId], env)).code).toBe(0)
        const ofRevoked = yield* keys(["rotate-secret", webhookId], env)
        expect(ofRevoked.code, ofRevoked.stderr).toBe(0)
        expect(ofRevoked.stdout).toContain(`API key ${keyId} is revoked: the outcomes of the quotes it submitted`)
        // no secret in the list, the file or any output but the one that made it
        const after = yield* keys(["list"], env)
        const files = filesOf(directory)
        for (const sentinel of [firstSecret, second, json.secret as string]) {
          expect(after.stdout).not.toContain(sentinel)
          expect(files).not.toContain(sentinel)
        }
      }).pipe(Effect.scoped),
    120_000
  )

  it.effect(
    "a GCX_DATA_KEY that sealed none of the file's webhook secrets is refused, exit 2, before anything is written",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const env = { GCX_DATABASE_FILE: Path.join(directory, "gcx.db") }
        const first = yield* keys(["create", "--name", "first", "--webhook", "https://shop.example/h"], env)
        expect(first.code, first.stderr).toBe(0)
        // the shell that forgot to export the gateway's key: another one
        const mistaken = yield* keys(["create", "--name", "second"], { ...env, GCX_DATA_KEY: CardCipher.generateKey() })
        expect(mistaken.code).toBe(2)
        const keyId = CardCipher.keyId(Result.getOrThrow(CardCipher.parseKey(dataKey)))
        expectOneErrorLine(
          mistaken.stderr,
          `the webhook secrets: a sealed secret was sealed with the data key ${keyId}`
        )
        const listed = yield* keys(["list"], env)
        expect(listed.stdout).not.toContain("second")
      }).pipe(Effect.scoped),
    60_000
  )

  it.effect(
    "create --json prints one object with the key; the notice goes to stderr; http on loopback is taken",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const output = yield* keys(["create", "--name", "json", "--webhook", "http://[::1]:8999/h", "--json"], {
          GCX_DATABASE_FILE: Path.join(directory, "gcx.db")
        })
        expect(output.code, output.stderr).toBe(0)
        const created = JSON.parse(output.stdout)
        expect(created).toMatchObject({ name: "json", ratePerSecond: 20, burst: 40 })
        expect(created.key).toMatch(/^gcx_sk_[A-Za-z0-9_-]{43}$/)
        expect(created.webhooks[0].secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
        expect(output.stderr.trim()).toBe(notShownAgain)
        // the keys' own file, beside GCX_DATABASE_FILE (which is not opened), private
        expect(Fs.existsSync(Path.join(directory, "gcx.db"))).toBe(false)
        expect(Fs.statSync(Path.join(directory, "gateway-keys.db")).mode & 0o777).toBe(0o600)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "embedded: keys are created and revoked while gcx serve runs; it takes the new key, and refuses it within 5 s of revoke",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const keysFile = Path.join(directory, "keys", "gateway.db")
        const env = { GCX_DATABASE_FILE: Path.join(directory, "gcx.db"), GCX_GATEWAY_KEYS_FILE: keysFile }
        let server: ChildProcess.ChildProcess | undefined
        let url: string | undefined
        const served = yield* spawn(process.execPath, [
          "--import",
          "tsx",
          entry,
          "serve",
          "--embedded",
          "--port",
          "0"
        ], {
          env: { GCX_DATA_KEY: dataKey, GCX_SANDBOX_TIME_SCALE: "0.01", ...env },
          timeout: 120_000,
          onStart: (child) => (server = child),
          onStdout: (stdout) => (url ??= /^gcx serve (http:\/\/127\.0\.0\.1:\d+) /m.exec(stdout)?.[1])
        }).pipe(Effect.forkScoped)
        for (let attempt = 0; attempt < 600 && url === undefined && served.pollUnsafe() === undefined; attempt++) {
          yield* Effect.sleep("100 millis")
        }
        assert(url !== undefined, "gcx serve did not print its address")

        // while it runs: create a key in the shared keys file
        const created = yield* keys(["create", "--name", "live", "--webhook", "http://localhost:9/h"], env)
        expect(created.code, created.stderr).toBe(0)
        const id = /key_[0-9a-f]{16}/.exec(created.stdout)![0]
        const key = /^key: (gcx_sk_[A-Za-z0-9_-]{43})$/m.exec(created.stdout)![1]!
        const listed = yield* keys(["list"], env)
        expect(listed.stdout).toContain(`${id}  live`)

        const call = (path: string, init: RequestInit = {}) =>
          Effect.promise(() =>
            fetch(`${url}${path}`, {
              ...init,
              headers: { authorization: `Bearer ${key}`, ...init.headers },
              signal: AbortSignal.timeout(10_000)
            }).then(async (response) => ({ status: response.status, body: await response.text() }))
          )
        const posted = yield* call("/v1/quotes", {
          method: "POST",
          headers: { "idempotency-key": "live-1", "content-type": "application/json" },
          body: JSON.stringify({
            cardNumber: TestData.Cards.instant,
            pinNumber: pin,
            productLineId: TestData.defaultProductLineId
          })
        })
        expect(posted.status, posted.body).toBe(202)
        const quote = `/v1/quotes/${JSON.parse(posted.body).id}`
        expect((yield* call(quote)).status).toBe(200)

        const revoked = yield* keys(["revoke", id], env)
        expect(revoked.code, revoked.stderr).toBe(0)
        const since = Date.now()
        let status = 200
        while (status !== 401 && Date.now() - since < 8_000) {
          yield* Effect.sleep("200 millis")
          status = (yield* call(quote)).status
        }
        expect(status).toBe(401)
        // the gateway's cache of authenticated keys is 5 s
        expect(Date.now() - since).toBeLessThan(6_000)

        // the keys' file, private, as the quotes' file is (its -wal and -shm exist while the gateway holds it open)
        for (const file of [keysFile, `${keysFile}-wal`, `${keysFile}-shm`]) {
          expect(Fs.statSync(file).mode & 0o777, file).toBe(0o600)
        }
        expect(Fs.statSync(Path.dirname(keysFile)).mode & 0o777).toBe(0o700)

        server!.kill("SIGTERM")
        const output = yield* Fiber.join(served)
        // stopped as a process manager stops it: a clean stop, exit 0 (130 is a failure to systemd)
        expect(output.code, output.stderr).toBe(0)
        expect(`${output.stdout}${output.stderr}`).not.toContain(key)
        expectNoSecrets(output)
      }).pipe(Effect.scoped),
    180_000
  )

  it.effect(
    "bad input is one error line naming the flag or the variable, exit 2, before the database is opened",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const env = { GCX_DATABASE_FILE: Path.join(directory, "gcx.db") }
        const cases: ReadonlyArray<readonly [ReadonlyArray<string>, Record<string, string>, string]> = [
          [
            ["create", "--name", "x", "--webhook", "ftp://files.example/h"],
            env,
            "--webhook must be an http or https URL"
          ],
          [
            ["create", "--name", "x", "--webhook", "https://user:pw@a.example/h"],
            env,
            "--webhook must not hold credentials"
          ],
          [
            ["create", "--name", "x", "--webhook", "http://shop.example/hooks"],
            env,
            "--webhook must be https (http only on loopback: 127.0.0.1, localhost, [::1]), got 'http://shop.example'"
          ],
          [["create", "--name", " "], env, "--name must be 1 to 100 characters"],
          [["create", "--name", "x", "--rate", "0"], env, "--rate must be a number above 0"],
          [["create", "--name", "x", "--burst", "2.5"], env, "--burst must be a whole number of at least 1"],
          [["create", "--name", "x"], { ...env, GCX_DATA_KEY: "" }, "GCX_DATA_KEY"]
        ]
        for (const [args, caseEnv, fragment] of cases) {
          const output = yield* keys(args, caseEnv)
          expect(output.code, `${args.join(" ")}: ${output.stderr}`).toBe(2)
          expectOneErrorLine(output.stderr, fragment, "--help)")
          expect(output.stdout).toBe("")
        }
        expect(Fs.readdirSync(directory)).toEqual([])
      }).pipe(Effect.scoped),
    120_000
  )
})

layer(Layer.provideMerge(TestPg.layerClient, TestPg.layer()), { excludeTestServices: true, timeout: 120_000 })(
  "gcx serve keys on PostgreSQL",
  (it) => {
    it.effect(
      "GCX_DATABASE_URL: create, list and revoke on the gateway's PostgreSQL, hashes only in its rows",
      () =>
        Effect.gen(function*() {
          const db = yield* TestPg.PgTestDatabase
          const { key, secrets } = yield* lifecycle({ GCX_DATABASE_URL: db.urlString }, DurableDeployment.where(db.url))
          const sql = yield* SqlClient.SqlClient
          const dump = JSON.stringify([
            yield* sql.unsafe("SELECT * FROM gcx_gateway_keys"),
            yield* sql.unsafe("SELECT * FROM gcx_gateway_webhooks")
          ], (_, value) => typeof value === "bigint" ? value.toString() : value)
          for (const sentinel of [key, ...secrets]) expect(dump).not.toContain(sentinel)
          expect(dump).toContain("https://shop.example/hooks/gcx")
        }),
      120_000
    )
  }
)

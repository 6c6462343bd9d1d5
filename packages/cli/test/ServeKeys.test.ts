/**
 * `gcx serve keys create|list|revoke`, each run as a separate process on a database of its own:
 * the embedded SQLite file (`GCX_DATABASE_FILE`) and a throwaway PostgreSQL (`GCX_DATABASE_URL`).
 * The key and the webhook secrets are printed once, by `create`, and found nowhere after: not in
 * `list`, not in the database.
 */
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { CardCipher } from "@gcx/workflow"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as TestPg from "../../workflow/test/utils/postgres.js"
import { entries, expectNoSecrets, expectOneErrorLine, lines, spawn } from "./helpers.js"

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

/** create → list → revoke → list on the database of `env`; returns the key and the secrets it printed. */
const lifecycle = (env: Record<string, string>) =>
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
      "http://127.0.0.1:8999/hook"
    ], env)
    expect(created.code, created.stderr).toBe(0)
    const out = lines(created.stdout)
    expect(out[0]).toMatch(/^created API key key_[0-9a-f]{16} 'checkout' \(5\/s, burst 10\)$/)
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
    expect(listed.stdout).toContain(`${id}  checkout  5/s burst 10  created `)
    expect(listed.stdout).toContain("active")
    expect(listed.stdout).toContain("https://shop.example/hooks/gcx")
    const listedJson = yield* keys(["list", "--json"], env)
    const [entryJson] = JSON.parse(listedJson.stdout).keys
    expect(entryJson).toMatchObject({ id, name: "checkout", ratePerSecond: 5, burst: 10, revokedAt: null })
    expect(entryJson.webhooks.map((webhook: { url: string }) => webhook.url).sort()).toEqual([
      "http://127.0.0.1:8999/hook",
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
    expectOneErrorLine(unknown.stderr, "no API key has the id 'key_0000000000000000'", "--help)")
    return { key, secrets: secrets as Array<string> }
  })

describe("gcx serve keys", () => {
  it.effect(
    "embedded: create prints the key and the secrets once; list shows neither; revoke; the file holds neither",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const { key, secrets } = yield* lifecycle({ GCX_DATABASE_FILE: Path.join(directory, "gcx.db") })
        const files = filesOf(directory)
        expect(files).toContain("https://shop.example/hooks/gcx")
        for (const sentinel of [key, ...secrets]) expect(files).not.toContain(sentinel)
      }).pipe(Effect.scoped),
    120_000
  )

  it.effect(
    "create --json prints one object with the key; the notice goes to stderr; http outside loopback warns",
    () =>
      Effect.gen(function*() {
        const directory = yield* folder
        const output = yield* keys(["create", "--name", "json", "--webhook", "http://hooks.example/h", "--json"], {
          GCX_DATABASE_FILE: Path.join(directory, "gcx.db")
        })
        expect(output.code, output.stderr).toBe(0)
        const created = JSON.parse(output.stdout)
        expect(created).toMatchObject({ name: "json", ratePerSecond: 20, burst: 40 })
        expect(created.key).toMatch(/^gcx_sk_[A-Za-z0-9_-]{43}$/)
        expect(created.webhooks[0].secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
        expect(output.stderr).toContain("is not https")
        expect(output.stderr).toContain("not shown again")
      }).pipe(Effect.scoped),
    60_000
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
          const { key, secrets } = yield* lifecycle({ GCX_DATABASE_URL: db.urlString })
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

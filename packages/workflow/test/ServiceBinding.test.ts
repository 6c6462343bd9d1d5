/**
 * A durable database belongs to the service it was first used with (`ServiceBinding`): on a real
 * SQLite file, and on a throwaway PostgreSQL, the first node records the service; the same service
 * opens it again; another endpoint, or another account of the same endpoint, is `ServiceMismatch`,
 * and the embedded deployment bound to another service fails before its runner starts.
 */
import { assert, describe, expect, it, layer } from "@effect/vitest"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import { Effect, Layer, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as Embedded from "../src/Embedded.js"
import * as ServiceBinding from "../src/ServiceBinding.js"
import { tempDatabase } from "./fixtures.js"
import * as TestPg from "./utils/postgres.js"

const configOf = (baseUrl: string, clientId: string, stage?: string) =>
  Result.getOrThrow(ExchangeConfig.make({
    baseUrl,
    authUrl: "https://auth.example.com",
    clientId,
    clientSecret: "client-secret-sentinel",
    apiKey: "api-key-sentinel",
    ...(stage === undefined ? {} : { stage })
  }))

const production = ServiceBinding.identityOf(configOf("https://api.example.com", "partner-client-id-sentinel", "prod"))
const staging = ServiceBinding.identityOf(configOf("https://staging.example.com", "partner-client-id-sentinel", "prod"))
const otherAccount = ServiceBinding.identityOf(configOf("https://api.example.com", "another-client", "prod"))

/** Binds the database in context to `production`, then checks what the others get. */
const bindings = Effect.gen(function*() {
  yield* ServiceBinding.bind(production)
  yield* ServiceBinding.bind(production)
  const endpoint = yield* Effect.flip(ServiceBinding.bind(staging))
  expect(endpoint).toMatchObject({
    _tag: "ServiceMismatch",
    recorded: "https://api.example.com/prod",
    configured: "https://staging.example.com/prod",
    differs: "endpoint"
  })
  expect(endpoint.message).toContain(
    "this database's durable quotes belong to https://api.example.com/prod, " +
      "not https://staging.example.com/prod (GCX_BASE_URL, GCX_STAGE)"
  )
  // the embedded sandbox is a service of its own, whatever its port
  const sandboxed = yield* Effect.flip(
    ServiceBinding.bind(ServiceBinding.serviceOf(configOf("http://127.0.0.1:4010", "c"), true))
  )
  expect(sandboxed).toMatchObject({ _tag: "ServiceMismatch", configured: "gcx:embedded-sandbox", differs: "endpoint" })
  expect(sandboxed.message).toContain("belong to https://api.example.com/prod, not the embedded sandbox (--embedded)")
  const account = yield* Effect.flip(ServiceBinding.bind(otherAccount))
  assert(account._tag === "ServiceMismatch")
  expect(account.differs).toBe("account")
  expect(account.message).toContain("another account (GCX_CLIENT_ID) of https://api.example.com/prod")
  // the client id is recorded as a fingerprint only, and no message shows it
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql.unsafe(`SELECT * FROM ${ServiceBinding.table}`)
  expect(rows).toHaveLength(1)
  for (const text of [JSON.stringify(rows), endpoint.message, account.message]) {
    expect(text).not.toContain("partner-client-id-sentinel")
  }
})

describe("ServiceBinding", () => {
  it("an identity is the endpoint with its stage, and a fingerprint of the client id", () => {
    expect(production.endpoint).toBe("https://api.example.com/prod")
    expect(production.account).toMatch(/^[0-9a-f]{16}$/)
    expect(otherAccount.account).not.toBe(production.account)
    expect(ServiceBinding.identityOf(configOf("https://api.example.com/", "c", "")).endpoint)
      .toBe("https://api.example.com")
  })

  it.live("on SQLite: recorded by the first, the same service again, another refused", () =>
    Effect.gen(function*() {
      const file = yield* tempDatabase
      yield* bindings.pipe(Effect.provide(Layer.orDie(Embedded.layerSqlite(file))))
    }).pipe(Effect.scoped))

  it.live("the embedded deployment on a file of another service fails to start, with ServiceMismatch", () =>
    Effect.gen(function*() {
      const file = yield* tempDatabase
      yield* Layer.build(Embedded.layer({ filename: file, service: production })).pipe(Effect.scoped)
      const refused = yield* Layer.build(Embedded.layer({ filename: file, service: staging })).pipe(
        Effect.scoped,
        Effect.flip
      )
      assert(refused._tag === "ServiceMismatch")
      // unbound (a sandbox's deployment), it opens
      yield* Layer.build(Embedded.layer({ filename: file })).pipe(Effect.scoped)
    }).pipe(Effect.scoped))
})

layer(Layer.provideMerge(TestPg.layerClient, TestPg.layer()), { excludeTestServices: true, timeout: 120_000 })(
  "ServiceBinding on PostgreSQL",
  (it) => {
    it.effect("recorded by the first, the same service again, another refused; nodes at once agree", () =>
      Effect.gen(function*() {
        // nodes started at once on a new database: one records, the others find its record
        yield* Effect.all([ServiceBinding.bind(production), ServiceBinding.bind(production)], {
          concurrency: "unbounded"
        })
        yield* bindings
      }))
  }
)

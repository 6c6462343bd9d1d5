/**
 * The service a durable database belongs to. The first node that opens a database with a service's
 * settings records that service in it: its endpoint (the base URL and the stage) and its account (a
 * fingerprint of the client id, never the id). A node configured for another service then refuses
 * to start on that database, with `ServiceMismatch`, before it resumes any quote.
 *
 * Why: the quotes in flight in a database were created on its service. Resumed against another one,
 * a quote's transaction is unknown there (it fails for good, `TransactionNotFound`), and a quote
 * whose POST may not have reached the first service is sent to the second: a staging quote becomes
 * a production transaction. The same holds for runners sharing a database: one configured for
 * another service does not join the others.
 *
 * The embedded sandbox is one service whatever its port (`sandbox`): a database a sandbox's node
 * used holds sandbox quotes only, and a real service's node refuses it, as a sandbox's node refuses a
 * real service's database.
 */
import type * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import { createHash } from "node:crypto"

/** What a database records of its service. */
export interface Identity {
  /** The base URL of the API with its stage segment, if any: `https://api.example.com/prod`. */
  readonly endpoint: string
  /** A fingerprint of the client id (16 hex digits of a SHA-256): tells accounts apart, shows neither. */
  readonly account: string
}

/** The service of an exchange client's configuration. */
export const identityOf = (config: ExchangeConfig.Service): Identity => ({
  endpoint: Option.match(config.stage, {
    onNone: () => config.baseUrl,
    onSome: (stage) => `${config.baseUrl}/${stage}`
  }),
  account: createHash("sha256").update("gcx service account\0").update(config.clientId).digest("hex").slice(0, 16)
})

/** The service of the embedded sandbox, whatever its port (each start is a new sandbox on a free port). */
export const sandbox: Identity = { endpoint: "gcx:embedded-sandbox", account: "sandbox" }

/** The service of a node: `sandbox` on the embedded sandbox, else its configuration's (`identityOf`). */
export const serviceOf = (config: ExchangeConfig.Service, embeddedSandbox: boolean): Identity =>
  embeddedSandbox ? sandbox : identityOf(config)

/** The database holds the quotes of another service (or another account of the same service). */
export class ServiceMismatch extends Schema.TaggedError<ServiceMismatch>()("ServiceMismatch", {
  /** The endpoint the database records. */
  recorded: Schema.String,
  /** The endpoint of this node's settings. */
  configured: Schema.String,
  /** What differs: the endpoint, or only the account (`GCX_CLIENT_ID`). */
  differs: Schema.Literals(["endpoint", "account"])
}) {
  override get message(): string {
    const named = (endpoint: string) => endpoint === sandbox.endpoint ? "the embedded sandbox" : endpoint
    const which = this.differs === "account"
      ? `another account (GCX_CLIENT_ID) of ${named(this.recorded)}`
      : this.configured === sandbox.endpoint
      ? `${named(this.recorded)}, not the embedded sandbox (--embedded)`
      : `${named(this.recorded)}, not ${this.configured} (GCX_BASE_URL, GCX_STAGE)`
    return `this database's durable quotes belong to ${which}: with other settings they would fail, or be sent ` +
      `again elsewhere. Use a database of its own for each service and account (GCX_DATABASE_FILE or GCX_DATABASE_URL)`
  }
}

/** The table of the database's service: one row. */
export const table = "gcx_service"

/**
 * Records `identity` as the database's service when it has none, then checks it: `ServiceMismatch`
 * when the database's is another. Creates the table when it is missing.
 */
export const bind = (
  identity: Identity
): Effect.Effect<void, ServiceMismatch | SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // nodes started at once on a new PostgreSQL database race to create it; tried again, the loser finds it
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
      id SMALLINT PRIMARY KEY,
      endpoint TEXT NOT NULL,
      account VARCHAR(16) NOT NULL
    )`.pipe(Effect.retry({ times: 3, schedule: Schedule.spaced("100 millis") }))
    yield* sql`INSERT INTO ${sql(table)} (id, endpoint, account) VALUES (1, ${identity.endpoint}, ${identity.account})
      ON CONFLICT (id) DO NOTHING`
    const rows = yield* sql<{ readonly endpoint: string; readonly account: string }>`
      SELECT endpoint, account FROM ${sql(table)} WHERE id = 1`
    const recorded = rows[0]
    if (recorded === undefined || (recorded.endpoint === identity.endpoint && recorded.account === identity.account)) {
      return
    }
    return yield* new ServiceMismatch({
      recorded: recorded.endpoint,
      configured: identity.endpoint,
      differs: recorded.endpoint === identity.endpoint ? "account" : "endpoint"
    })
  })

/** `bind` when the layer is built; nothing when `identity` is undefined (an unbound database). */
export const layer = (
  identity: Identity | undefined
): Layer.Layer<never, ServiceMismatch | SqlError.SqlError, SqlClient.SqlClient> =>
  identity === undefined ? Layer.empty : Layer.effectDiscard(bind(identity))

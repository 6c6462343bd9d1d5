/**
 * `gcx serve`: the gateway of `@gcx/gateway` over the deployment of durable
 * quotes, until Ctrl-C or SIGTERM. Its flags are in `commands/Serve`.
 *
 * - Embedded (no `GCX_DATABASE_URL`): the same deployment as `gcx quote
 *   --durable`, SQLite in `GCX_DATABASE_FILE` (default `.gcx/gcx.db`); this
 *   process runs the quotes. The API keys are in a file of their own
 *   (`GCX_GATEWAY_KEYS_FILE`, default `gateway-keys.db` beside it), which
 *   `gcx serve keys` changes while this process serves.
 * - Client-only (`GCX_DATABASE_URL` set): the runners of that PostgreSQL run
 *   the quotes; gateways scale out behind a load balancer.
 *
 * It serves other backends: without connection settings it fails naming
 * them (the embedded sandbox only with `--embedded`). `GCX_DATA_KEY` seals
 * the cards and derives the quote ids; it is read before the database is.
 */
import * as ListenFailure from "@gcx/core/ListenFailure"
import * as ApiKeys from "@gcx/gateway/ApiKeys"
import * as Gateway from "@gcx/gateway/Gateway"
import * as RateLimit from "@gcx/gateway/RateLimit"
import * as WebhookDelivery from "@gcx/gateway/WebhookDelivery"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import type * as QuoteJournal from "@gcx/poller/QuoteJournal"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import * as EventLog from "@gcx/workflow/EventLog"
import * as ServiceBinding from "@gcx/workflow/ServiceBinding"
import type * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as NetAddress from "effect/net/NetAddress"
import * as Option from "effect/Option"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Connection from "../Connection.js"
import * as DatabaseFailure from "../DatabaseFailure.js"
import * as DurableDeployment from "../DurableDeployment.js"
import { CliError, ExitCode, untilStopped } from "../ExitCode.js"
import * as Output from "../Output.js"
import * as KeysStore from "./KeysStore.js"

/** What `gcx serve` is given: its flags (`commands/Serve`). */
export interface Flags {
  readonly port: Option.Option<number>
  readonly host: Option.Option<string>
  readonly connection: Connection.Flags
}

/** The services the gateway takes from its callers' stores: API keys, their rate limits, the quotes' events. */
export type Callers = ApiKeys.ApiKeys | RateLimit.RateLimit | EventLog.EventLog

/** Where the API keys are: a layer over the deployment's database and the cipher (or over the cipher alone). */
export type Keys = Layer.Layer<
  ApiKeys.ApiKeys,
  SqlError.SqlError | CardCipher.UnsealError,
  SqlClient.SqlClient | CardCipher.CardCipher
>

/** The callers' stores: the API keys of `keys` (default: the deployment's database), their rate limits, the quotes' events. */
export const callers = (
  keys: Keys = ApiKeys.layer
): Layer.Layer<Callers, SqlError.SqlError | CardCipher.UnsealError, SqlClient.SqlClient | CardCipher.CardCipher> =>
  Layer.mergeAll(keys, RateLimit.layer, EventLog.layer())

/** A failure to start, as the one line `gcx` reports. */
const startFailure = (code: ExitCode, message: string) => Effect.fail(new CliError({ code, message }))

/**
 * The gateway over the deployment of durable quotes (embedded on
 * `GCX_DATABASE_FILE`, or client-only on the runners of `GCX_DATABASE_URL`)
 * and the exchange client of the flags, until interrupted.
 */
export const run = (flags: Flags, services?: ReturnType<typeof callers>) =>
  untilStopped(
    Effect.scoped(Effect.gen(function*() {
      // added first, so run last: once the server and the engine have stopped
      let started = false
      yield* Effect.addFinalizer(() => started ? Console.log("gcx serve: stopped") : Effect.void)
      const url = yield* DurableDeployment.databaseUrl
      const port = Option.isSome(flags.port) ? flags.port.value : yield* Gateway.portConfig
      // read with the port, before the deployment: a mistaken one is told at once
      const maxHeldPerKey = yield* Gateway.maxHeldConfig
      // built first, so that missing settings or a bad key fail before any connection to the database
      const base = yield* Layer.build(
        Layer.merge(CardCipher.layerConfig(), Connection.layer(flags.connection, "none"))
      )
      const filename = yield* DurableDeployment.databaseFile
      // embedded, the keys are in a file of their own, shared with `gcx serve keys` (one layer: one cache, one connection)
      const keysFile = Option.isSome(url) ? undefined : yield* KeysStore.keysFile(filename)
      const keys: Keys = keysFile === undefined ? ApiKeys.layer : ApiKeys.layerFile(keysFile)
      // the embedded sandbox's quotes: never in the file of a real service's quotes
      const quotesFile = flags.connection.embedded ? DurableDeployment.sandboxDatabaseFile(filename) : filename
      const service = ServiceBinding.serviceOf(
        Context.get(base, ExchangeConfig.ExchangeConfig),
        flags.connection.embedded
      )
      const quotes: Layer.Layer<
        DurableQuotes.DurableQuotes | SqlClient.SqlClient,
        | Config.ConfigError
        | SqlError.SqlError
        | QuoteJournal.JournalError
        | CardCipher.UnsealError
        | ServiceBinding.ServiceMismatch
        | CliError,
        CardCipher.CardCipher | ExchangeClient.ExchangeClient
      > = Option.isSome(url)
        ? DurableQuotes.layer().pipe(Layer.provideMerge(DurableDeployment.clientDeployment(url.value, service)))
        : Embedded.layerQuotes({ filename: quotesFile, service }, WebhookDelivery.layerNode({}, keys))
      const where = Option.isSome(url)
        ? `client-only on the runners of ${DurableDeployment.where(url.value)}`
        : `embedded on ${quotesFile}${
          flags.connection.embedded ? " (the embedded sandbox's quotes)" : ""
        }; API keys in ${keysFile}`
      const context = yield* Layer.build(
        Gateway.layerConfig({ port, host: Option.getOrUndefined(flags.host), maxHeldPerKey }).pipe(
          Layer.provideMerge(services ?? callers(keys)),
          Layer.provideMerge(quotes),
          Layer.provide(Layer.succeedContext(base))
        )
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      const shown = address._tag === "UnixPathAddress"
        ? address.path
        : `http://${NetAddress.formatHost(address)}:${address.port}`
      yield* Console.log(`gcx serve ${shown} (${where}; docs at ${shown}/docs; Ctrl-C or SIGTERM to stop)`)
      started = true
      return yield* Effect.never.pipe(Effect.onInterrupt(() =>
        Console.log(
          `gcx serve: stopping (${Output.stopAsked() ?? "interrupted"}): new connections refused, open event ` +
            "streams ended (their clients resume), requests in flight answered"
        )
      ))
    })).pipe(
      Effect.catchTags({
        ServeError: (error) =>
          startFailure(ExitCode.Usage, `gcx serve cannot listen${ListenFailure.describe(error.cause)}`),
        // the embedded database is another process's: a setup to change, not a failure of the service
        SqlError: (error) =>
          startFailure(
            error.reason._tag === "LockTimeoutError" ? ExitCode.Usage : ExitCode.ServiceFailure,
            `database: ${error.message}`
          ),
        JournalError: (error) => startFailure(ExitCode.ServiceFailure, `database: ${error.message}`),
        UnknownDataKey: (error) => startFailure(ExitCode.Usage, `gcx serve: ${error.message}`),
        ServiceMismatch: (error) => Effect.fail(DatabaseFailure.serviceMismatch(error)),
        UnsealError: (error) => startFailure(ExitCode.Usage, `gcx serve: the webhook secrets: ${error.message}`)
      })
    )
  )

/** The `serve` command's handler (`commands/Serve`). */
export const handler = (flags: Flags) => run(flags)

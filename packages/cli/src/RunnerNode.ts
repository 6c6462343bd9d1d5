/**
 * What `gcx runner` runs: a cluster runner of durable quotes on PostgreSQL, loaded on demand so that
 * the other commands never load the cluster's socket and PostgreSQL modules.
 */
import * as ListenFailure from "@gcx/core/ListenFailure"
import * as WebhookDelivery from "@gcx/gateway/WebhookDelivery"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as ClusterSecurity from "@gcx/workflow/ClusterSecurity"
import * as Runner from "@gcx/workflow/Runner"
import * as ServiceBinding from "@gcx/workflow/ServiceBinding"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Connection from "./Connection.js"
import * as DatabaseFailure from "./DatabaseFailure.js"
import * as ExitCode from "./ExitCode.js"
import * as Text from "./Text.js"

/** A usage error of `gcx runner`, one line naming the flag or the variable (with the help hint of `runner`). */
const usage = (message: string) => new ExitCode.CliError({ code: ExitCode.ExitCode.Usage, message })

/** What `gcx runner` is given: its flags (`commands/Runner`). */
export interface Flags {
  readonly listen: Option.Option<string>
  readonly insecureLoopback: boolean
  readonly connection: Connection.Flags
}

/** Hosts that say "every interface" to listen on, and that no other node can reach this runner at. */
const unspecified: ReadonlySet<string> = new Set(["0.0.0.0", "::", "[::]"])

/**
 * How this runner authenticates the other nodes: the certificates of `GCX_RUNNER_TLS_*`, or plain TCP with
 * `--insecure-loopback` on a loopback address only. Anything else refuses to start, naming the variables.
 */
const security = (insecureLoopback: boolean, listen: { readonly host: string }) =>
  Effect.gen(function*() {
    const chosen = yield* ClusterSecurity.securityConfig(insecureLoopback).pipe(
      Effect.catchTag("ConfigError", (error): Effect.Effect<never, Config.ConfigError | ExitCode.CliError> =>
        // a PEM that cannot be read is reported as any configuration error, naming its variable
        error.message.includes(ClusterSecurity.notSet)
          ? Effect.fail(usage(
            `${ClusterSecurity.tlsVariables.join(", ")} must all be set: the runner port authenticates the ` +
              `other nodes with the cluster's TLS certificates (or --insecure-loopback on a loopback --listen)`
          ))
          : Effect.fail(error))
    )
    if (chosen._tag === "InsecureLoopback" && !ClusterSecurity.isLoopback(listen.host)) {
      return yield* Effect.fail(usage(
        `--insecure-loopback listens on a loopback address only, got ${listen.host} (set ${
          ClusterSecurity.tlsVariables.join(", ")
        } to serve other machines)`
      ))
    }
    return chosen
  })

/**
 * The runner over the exchange connection of the flags, until interrupted. A runner serves other
 * nodes: without connection settings it fails naming them (the embedded sandbox only with `--embedded`),
 * before it reaches the database.
 */
export const run = (options: Flags) =>
  ExitCode.untilStopped(
    Effect.gen(function*() {
      // --listen, else GCX_RUNNER_LISTEN (as `Runner.layerConfig` reads it)
      const listenFrom = Option.isSome(options.listen) ? "--listen" : "GCX_RUNNER_LISTEN"
      const given = Option.isSome(options.listen)
        ? options.listen
        : yield* Config.option(Config.String("GCX_RUNNER_LISTEN"))
      const listen = yield* Option.match(given, {
        onNone: () => Effect.succeed(undefined),
        onSome: (value) =>
          Result.match(Runner.parseRunnerAddress(value), {
            onFailure: () =>
              Effect.fail(usage(`${listenFrom} must be host:port, got '${Text.safe(value.slice(0, 80))}'`)),
            onSuccess: Effect.succeed
          })
      })
      const advertised = yield* Config.option(Runner.runnerAddressConfig("GCX_RUNNER_ADDRESS"))
      const runnerAddress = Option.getOrUndefined(advertised) ?? listen
      if (runnerAddress === undefined) {
        return yield* Effect.fail(
          usage(
            "GCX_RUNNER_ADDRESS is not set: set it, or --listen, to the host:port the other nodes reach this runner at"
          )
        )
      }
      if (unspecified.has(runnerAddress.host)) {
        return yield* Effect.fail(usage(
          `the runner's address ${runnerAddress.host} is not one the other nodes can reach: set GCX_RUNNER_ADDRESS ` +
            `to this machine's host:port (--listen ${runnerAddress.host}:${runnerAddress.port} may stay, to listen on every interface)`
        ))
      }
      const cluster = yield* security(options.insecureLoopback, listen ?? runnerAddress)
      if (cluster._tag === "InsecureLoopback" && !ClusterSecurity.isLoopback(runnerAddress.host)) {
        return yield* Effect.fail(usage(
          `without TLS certificates the other nodes reach this runner on loopback only: GCX_RUNNER_ADDRESS ` +
            `must be a loopback address too, got ${Text.safe(runnerAddress.host)}`
        ))
      }
      const insecureVariable = yield* Config.Boolean("GCX_RUNNER_INSECURE_LOOPBACK").pipe(Config.withDefault(false))
      if ((options.insecureLoopback || insecureVariable) && cluster._tag !== "InsecureLoopback") {
        yield* Console.error(
          `gcx: ${
            options.insecureLoopback ? "--insecure-loopback" : "GCX_RUNNER_INSECURE_LOOPBACK"
          } ignored: GCX_RUNNER_TLS_* are set, so the runner uses mutual TLS`
        )
      }
      const limits = yield* ClusterSecurity.limitsConfig
      const databaseUrl = yield* Runner.databaseUrlConfig
      yield* Effect.scoped(Effect.gen(function*() {
        // built first, so that missing settings or a bad key fail before any connection to the database
        const services = yield* Layer.build(
          Layer.merge(CardCipher.layerConfig(), Connection.layer(options.connection, "none"))
        )
        const service = ServiceBinding.serviceOf(
          Context.get(services, ExchangeConfig.ExchangeConfig),
          options.connection.embedded
        )
        yield* Layer.build(
          Runner.layerQuotes(
            { databaseUrl, runnerAddress, listenAddress: listen, security: cluster, limits, service },
            undefined,
            // every runner: the cluster may run a gateway quote's webhook delivery on any of them
            WebhookDelivery.layerNode()
          ).pipe(
            Layer.provide(Layer.succeedContext(services))
          )
        )
        const transport = cluster._tag === "InsecureLoopback" ? "plain TCP on loopback" : "mutual TLS"
        const listening =
          listen === undefined || (listen.host === runnerAddress.host && listen.port === runnerAddress.port)
            ? ""
            : ` (listening on ${listen.host}:${listen.port})`
        yield* Console.log(
          `gcx runner ${runnerAddress.host}:${runnerAddress.port}${listening} running durable quotes, nodes over ` +
            `${transport} (Ctrl-C or SIGTERM to stop)`
        )
        return yield* Effect.never
      }))
    }).pipe(
      Effect.catchTags({
        DatabaseUnreachable: (error) => Effect.fail(DatabaseFailure.databaseFailure(error)),
        SocketServerError: (error) =>
          Effect.fail(
            new ExitCode.CliError({
              code: ExitCode.ExitCode.Usage,
              message: `the runner cannot listen${ListenFailure.describe(error.cause)}`
            })
          ),
        SqlError: (error) =>
          Effect.fail(
            new ExitCode.CliError({ code: ExitCode.ExitCode.ServiceFailure, message: `database: ${error.message}` })
          ),
        ServiceMismatch: (error) => Effect.fail(DatabaseFailure.serviceMismatch(error)),
        UnsealError: (error) =>
          Effect.fail(
            new ExitCode.CliError({ code: ExitCode.ExitCode.Usage, message: `the webhook secrets: ${error.message}` })
          )
      })
    )
  )

/** The `runner` command's handler (`commands/Runner`). */
export const handler = run

import * as LogLevel from "effect/LogLevel"
import * as Result from "effect/Result"
import { parseArgs } from "node:util"
import * as Faults from "../Faults.js"
import type { SandboxOptions } from "../Sandbox.js"

/** The port `pnpm sandbox` listens on by default. */
export const defaultPort = 4010

/** The usage text of `gcx-sandbox` (`npx @gcx/sandbox`; `pnpm sandbox` in the repository). */
export const usage = `Usage: gcx-sandbox [options]   (npx @gcx/sandbox; pnpm sandbox in the gcx repository)

  --port <n>            port of the API (default ${defaultPort})
  --host <host>         interface to listen on (default 127.0.0.1); one that is not
                        loopback (0.0.0.0) needs --admin-key or GCX_SANDBOX_ADMIN_KEY
  --allowed-host <name> a Host name to serve besides localhost, 127.0.0.1, [::1] and
                        the bound address, repeatable (others get 421)
  --auth-port <n>       serve the token endpoint on its own port (0: a free port)
  --stage <name>        stage segment of the quote paths (default sandbox)
  --time-scale <x>      multiply scenario durations (default 1; 0.01 = 100x faster)
  --token-lifetime <s>  access token lifetime in seconds (default 3600)
  --admin-key <key>     key of the /__sandbox/ admin API (default: GCX_SANDBOX_ADMIN_KEY,
                        else a random one per start, printed in the banner)
  --seed <seed>         seed of the fault generator (default 0)
  --fault <rule>        a fault rule, repeatable: route:kind[:option...]
                          route: token heartbeat createQuote getTransaction any
                          kind: status503 status500 reset dropAnswer latency malformed stall
                          options: p=0.2 (or 0.2) times=3 seq=1,0,1 retry-after=2 ms=250 ms=100-300
                          e.g. --fault createQuote:status503:0.2:retry-after=1
  --latency <ms>        added latency on every route: 250 or 100-300 (same as --fault any:latency:ms=...)
  --max-transactions <n> transactions (and requestIds) kept; the oldest finished
                        are evicted first past it (default 100000)
  --max-dashboard-streams <n> dashboard event streams open at once; beyond, 503
                        (default 16)
  --log-level <level>   level of the per-request log line (default Info)
  --quiet               no per-request log lines
  --help                this text
`

const number = (flag: string, text: string | undefined): Result.Result<number | undefined, string> => {
  if (text === undefined) return Result.succeed(undefined)
  const value = Number(text)
  return Number.isFinite(value) && value >= 0 ? Result.succeed(value) : Result.fail(`${flag} must be a number >= 0`)
}

/** A whole number of at least 1, when given. */
const count = (flag: string, text: string | undefined): Result.Result<number | undefined, string> =>
  Result.flatMap(
    number(flag, text),
    (value) =>
      value === undefined || (Number.isInteger(value) && value >= 1)
        ? Result.succeed(value)
        : Result.fail(`${flag} must be a whole number >= 1`)
  )

const logLevels: ReadonlyArray<string> = LogLevel.values

/**
 * Parses the arguments of `pnpm sandbox`: the options, `"help"`, or what is
 * wrong with them. A leading `--` (as `pnpm start -- --port 0` forwards it) is
 * skipped.
 */
export const parse = (argv: ReadonlyArray<string>): Result.Result<SandboxOptions | "help", string> =>
  Result.gen(function*() {
    const { values } = yield* Result.try({
      try: () =>
        parseArgs({
          args: argv[0] === "--" ? argv.slice(1) : [...argv],
          strict: true,
          options: {
            port: { type: "string" },
            host: { type: "string" },
            "allowed-host": { type: "string", multiple: true },
            "auth-port": { type: "string" },
            stage: { type: "string" },
            "time-scale": { type: "string" },
            "token-lifetime": { type: "string" },
            "admin-key": { type: "string" },
            seed: { type: "string" },
            fault: { type: "string", multiple: true },
            latency: { type: "string", multiple: true },
            "max-transactions": { type: "string" },
            "max-dashboard-streams": { type: "string" },
            "log-level": { type: "string" },
            quiet: { type: "boolean" },
            help: { type: "boolean" }
          }
        }),
      catch: (error) => (error as Error).message
    })
    if (values.help === true) return "help" as const
    const latency = (values.latency ?? []).map((ms) => `any:latency:ms=${ms}`)
    const faults: Array<Faults.FaultRule> = []
    for (const text of [...(values.fault ?? []), ...latency]) faults.push(yield* Faults.parseRule(text))
    const logLevel = values.quiet === true ? "None" : values["log-level"] ?? "Info"
    if (!logLevels.includes(logLevel)) return yield* Result.fail(`--log-level must be one of ${logLevels.join(", ")}`)
    const options: SandboxOptions = {
      port: (yield* number("--port", values.port)) ?? defaultPort,
      host: values.host,
      allowedHosts: values["allowed-host"] ?? [],
      authPort: yield* number("--auth-port", values["auth-port"]),
      stage: values.stage,
      timeScale: yield* number("--time-scale", values["time-scale"]),
      tokenLifetimeSeconds: yield* number("--token-lifetime", values["token-lifetime"]),
      adminKey: values["admin-key"],
      seed: values.seed === undefined || Number.isNaN(Number(values.seed)) ? values.seed : Number(values.seed),
      faults,
      maxTransactions: yield* count("--max-transactions", values["max-transactions"]),
      maxDashboardStreams: yield* count("--max-dashboard-streams", values["max-dashboard-streams"]),
      logLevel: logLevel as LogLevel.LogLevel
    }
    return options
  })

/**
 * Runs `gcx` as a separate process, as a user would, or in this process
 * (`Cli.main`), and checks what it printed; a hostile service for the tests
 * of what gcx prints of the service's texts.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { expect } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { CardCipher, Embedded } from "@gcx/workflow"
import type { Duration, Scope } from "effect"
import { ConfigProvider, Console, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import * as Path from "node:path"
import * as Url from "node:url"
import * as Cli from "../src/Cli.js"
import type * as Connection from "../src/Connection.js"

/** The repository root: every process runs there, as `pnpm gcx` does. */
export const root = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../../..")

/** The entry points. */
export const entries = {
  bin: "packages/cli/src/bin.ts",
  demo: "packages/cli/src/demo.ts",
  executable: "packages/cli/bin/gcx.mjs"
} as const

/** What a process printed and how it ended. */
export interface Output {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of the tests without any GCX_* variable, plus `env`. */
export const environment = (env: Record<string, string> = {}): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("GCX_") && name !== "NO_COLOR" && value !== undefined) out[name] = value
  }
  return { ...out, ...env }
}

/**
 * Runs a command line to its end (killed after `timeout` ms). With
 * `closeStdoutAfter`, its stdout is closed once that many lines have come,
 * as `| head -n` does, and `stdout` holds those lines. `onStdout` sees the
 * output so far, and the child (to signal it), at every chunk.
 */
export const spawn = (
  command: string,
  args: ReadonlyArray<string>,
  options: {
    readonly env?: Record<string, string>
    readonly timeout?: number
    readonly closeStdoutAfter?: number
    readonly onStdout?: (stdout: string, child: ChildProcess.ChildProcess) => void
    /** Told of the process once it is started (to signal it, say). */
    readonly onStart?: (child: ChildProcess.ChildProcess) => void
  } = {}
): Effect.Effect<Output> =>
  Effect.callback<Output>((resume) => {
    const child = ChildProcess.spawn(command, args, {
      cwd: root,
      env: environment(options.env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    const keep = options.closeStdoutAfter
    child.stdout.on("data", (chunk) => {
      if (child.stdout.destroyed) return
      stdout += chunk
      if (keep !== undefined && stdout.split("\n").length > keep) {
        stdout = stdout.split("\n").slice(0, keep).join("\n") + "\n"
        child.stdout.destroy()
      }
      options.onStdout?.(stdout, child)
    })
    child.stderr.on("data", (chunk) => (stderr += chunk))
    options.onStart?.(child)
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeout ?? 60_000)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, signal, stdout, stderr }))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })

/** Runs `gcx <args>` (the TypeScript entry, as `pnpm gcx` does) and checks that its output holds no secret. */
export const gcx = (
  args: ReadonlyArray<string>,
  options: Parameters<typeof spawn>[2] = {}
): Effect.Effect<Output> =>
  spawn(process.execPath, ["--import", "tsx", entries.bin, ...args], options).pipe(
    Effect.tap((output) => Effect.sync(() => expectNoSecrets(output)))
  )

/**
 * Runs `gcx <args>` (the TypeScript entry) and sends it `signal` once, when its stdout first matches
 * `when`; returns once it has ended (killed after 60 s).
 */
export const interruptedGcx = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  when: RegExp,
  signal: NodeJS.Signals = "SIGINT"
): Effect.Effect<Output> => {
  let sent = false
  return spawn(process.execPath, ["--import", "tsx", entries.bin, ...args], {
    env,
    onStdout: (stdout, child) => {
      if (!sent && when.test(stdout)) {
        sent = true
        child.kill(signal)
      }
    }
  })
}

/** The PIN the tests send: distinctive, so that finding it anywhere in the output is a leak. */
export const pin = "Pin-7391-secret"

/** Every full card number of the sandbox's scenarios. */
export const cardNumbers: ReadonlyArray<string> = Object.values(TestData.Cards)

/**
 * Checks that an output holds no secret: no test PIN, no full card number,
 * no client secret or API key, no bearer token (a JWT starts with `eyJ`),
 * and no stack trace.
 */
export const expectNoSecrets = (output: Output): void => {
  const text = `${output.stdout}\n${output.stderr}`
  const secrets = [pin, ...cardNumbers, TestData.partner.clientSecret, TestData.partner.apiKey, "eyJ", "Bearer "]
  for (const secret of secrets) expect(text, `the output holds ${secret}`).not.toContain(secret)
  expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/)
}

/** The GCX_* variables that point gcx at a sandbox, with its default test partner. */
export const envFor = (server: Sandbox.Service): Record<string, string> => Sandbox.environment(server)

/** A quiet sandbox on a free port, in the test process. */
export const sandbox = (options: Sandbox.SandboxOptions = {}) => Sandbox.layer({ logLevel: "None", ...options })

/** The lines of a text, without the empty ones. */
export const lines = (text: string): Array<string> => text.split("\n").filter((line) => line.trim() !== "")

/** Card flags for a scenario card and the test PIN. */
export const cardArgs = (cardNumber: string, product: string = TestData.defaultProductLineId) => [
  "--card",
  cardNumber,
  "--pin",
  pin,
  "--product",
  product
]

/** What `gcx` printed in process, and its exit code. */
export interface InProcess {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `gcx <args>` in this process (`Cli.main`, as the bin does), with `env`
 * as its only configuration source and a console that keeps what it prints.
 */
export const gcxInProcess = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {}
): Effect.Effect<InProcess> =>
  Effect.gen(function*() {
    const base = yield* Console.Console
    const out: Array<string> = []
    const err: Array<string> = []
    const push = (to: Array<string>) => (...values: ReadonlyArray<unknown>) => {
      to.push(`${values.map(String).join(" ")}\n`)
    }
    const capture: Console.Console = {
      ...base,
      log: push(out),
      info: push(out),
      debug: push(out),
      error: push(err),
      warn: push(err)
    }
    const code = yield* Cli.main(["node", "gcx", ...args]).pipe(
      Effect.provide(NodeServices.layer),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env)),
      Effect.provideService(Console.Console, capture)
    )
    const output = { code, stdout: out.join(""), stderr: err.join("") }
    expectNoSecrets({ ...output, signal: null })
    return output
  })

/** A raw control character (C0 but newline, DEL, C1): what no output of gcx may hold. */
// eslint-disable-next-line no-control-regex
export const rawControl = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/

/**
 * Runs `gcx <args>` as a process whose stdout reader goes away, as `| head -n`
 * does: stdout is closed once `lines` lines have come. Returns what came before
 * and stderr.
 */
export const gcxClosingStdout = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly lines: number; readonly timeout?: number }
): Effect.Effect<Output> =>
  spawn(process.execPath, ["--import", "tsx", entries.bin, ...args], {
    ...options,
    timeout: options.timeout ?? 90_000,
    closeStdoutAfter: options.lines
  })

/** Checks that a failure was reported as one `error:` line on stderr (besides `gcx:` notes) holding `fragments`. */
export const expectOneErrorLine = (stderr: string, ...fragments: ReadonlyArray<string>): string => {
  const reported = lines(stderr).filter((line) => !line.startsWith("gcx: "))
  expect(reported).toHaveLength(1)
  expect(reported[0]).toMatch(/^error: /)
  for (const fragment of fragments) expect(reported[0]).toContain(fragment)
  return reported[0]!
}

/**
 * A hostile service on loopback: a proxy in front of `target` (a sandbox)
 * that rewrites every JSON string under one of `keys` in its answers with
 * `rewrite`, so that the service's own texts carry what the test plants.
 */
export const hostileProxy = (
  target: string,
  keys: ReadonlyArray<string>,
  rewrite: (value: string) => string
): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<Http.Server & { url: string }>((resume) => {
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const upstream = Http.request(
            new URL(request.url ?? "/", target),
            { method: request.method, headers: { ...request.headers, host: new URL(target).host } },
            (answer) => {
              const body: Array<Buffer> = []
              answer.on("data", (chunk: Buffer) => body.push(chunk))
              answer.on("end", () => {
                const text = Buffer.concat(body).toString("utf8")
                let out = text
                try {
                  out = JSON.stringify(JSON.parse(text), (key, value) =>
                    keys.includes(key) && typeof value === "string" ? rewrite(value) : value)
                } catch {
                  // not JSON: passed as it is
                }
                const headers = { ...answer.headers, "content-length": String(Buffer.byteLength(out)) }
                delete headers["transfer-encoding"]
                response.writeHead(answer.statusCode ?? 502, headers)
                response.end(out)
              })
            }
          )
          upstream.on("error", () =>
            response.destroy())
          upstream.end(Buffer.concat(chunks))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed(Object.assign(server, { url: `http://127.0.0.1:${port}` })))
      })
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => server.url))

/** The connection flags as parsed when none is given, with `flags` over them. */
export const connectionFlags = (flags: Partial<Connection.Flags> = {}): Connection.Flags => ({
  env: Option.none(),
  baseUrl: Option.none(),
  authUrl: Option.none(),
  stage: Option.none(),
  clientId: Option.none(),
  scope: Option.none(),
  authStyle: Option.none(),
  embedded: false,
  ...flags
})

/**
 * Durable quotes embedded in `filename` under `dataKey`, in the test process, for `server`'s default
 * partner with fast retries; a POST whose answers are lost is sent again after `resumeDelays`.
 */
export const embeddedQuotes = (
  server: Sandbox.Service,
  filename: string,
  dataKey: string,
  resumeDelays: ReadonlyArray<Duration.Input>
) =>
  Embedded.layerQuotes({ filename, track: { resumeDelays } }).pipe(
    Layer.provide(CardCipher.layer(dataKey)),
    Layer.provide(ExchangeClient.layerWith({
      ...Sandbox.clientOptions(server),
      retry: { baseDelay: "10 millis", maxDelay: "50 millis" }
    })),
    Layer.provide(FetchHttpClient.layer),
    Layer.orDie
  )

/**
 * The telemetry of `gcx`, as a separate process: with
 * OTEL_EXPORTER_OTLP_ENDPOINT set a command exports its spans and metrics
 * before it exits; `gcx batch --metrics-port` serves Prometheus text while it
 * runs.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { entries, envFor, environment, expectNoSecrets, gcx, pin, root, sandbox } from "./helpers.js"

const { Cards } = TestData

/** A free local port: bound, then released. */
const freePort = Effect.callback<number>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * Runs `gcx` and scrapes `url` once it has printed its first result line;
 * returns the scrape and the process's output.
 */
const scrapeWhileRunning = (args: ReadonlyArray<string>, env: Record<string, string>, url: string) =>
  Effect.callback<
    { readonly scrape: string; readonly code: number | null; readonly stdout: string; readonly stderr: string }
  >(
    (resume) => {
      const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", entries.bin, ...args], {
        cwd: root,
        env: environment(env),
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      let scrape: Promise<string> | undefined
      // with --json, each finished card prints a result line on stdout: scrape after the first
      child.stdout.on("data", (chunk) => {
        stdout += chunk
        if (scrape === undefined && stdout.includes("\n")) scrape = fetch(url).then((response) => response.text())
      })
      child.stderr.on("data", (chunk) => (stderr += chunk))
      const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
      child.on("close", (code) => {
        clearTimeout(timer)
        void (scrape ?? Promise.resolve("")).then((text) =>
          resume(Effect.succeed({ scrape: text, code, stdout, stderr }))
        )
      })
      return Effect.sync(() => child.kill("SIGKILL"))
    }
  )

describe("gcx telemetry", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("exports", (it) => {
    it.effect("with OTEL_EXPORTER_OTLP_ENDPOINT, a command exports its spans and metrics before it exits", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const receiver = yield* OtlpReceiver.make()
        const output = yield* gcx(["heartbeat"], {
          env: { ...envFor(server), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "gcx-cli-test" }
        })
        expect(output.code).toBe(0)
        expect(receiver.spans().map((span) => span.name)).toContain("ExchangeClient.heartbeat")
        expect(
          OtlpReceiver.valueOf(receiver.metrics(), "http.client.request.duration", { "gcx.operation": "heartbeat" })
        )
          .toBe(1)
        expect(JSON.stringify(receiver.bodies)).toContain("gcx-cli-test")
      }).pipe(Effect.scoped))

    it.effect("gcx batch --metrics-port serves Prometheus text while it runs", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const port = yield* freePort
        const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-metrics-test-"))
        const input = Path.join(directory, "cards.csv")
        // the slow card (30 s, 1.5 s at this time scale) keeps the batch running past the first outcome
        Fs.writeFileSync(
          input,
          [
            "cardNumber,pinNumber,productLineId",
            ...[Cards.instant, Cards.success, Cards.slow].map((n) => `${n},${pin},1000`)
          ]
            .join("\n")
        )
        const run = yield* scrapeWhileRunning(
          ["batch", input, "--concurrency", "3", "--json", "--metrics-port", String(port)],
          envFor(server),
          `http://127.0.0.1:${port}/metrics`
        )
        expectNoSecrets({ ...run, signal: null })
        expect(run.code).toBe(0)
        expect(run.stderr).toContain(`gcx: metrics at http://127.0.0.1:${port}/metrics`)
        expect(run.scrape).toMatch(/^gcx_quotes_submitted_total \d+$/m)
        // the unit is in the Prometheus name (@gcx/http's Telemetry on Effect 4)
        expect(run.scrape).toContain("# TYPE gcx_quote_duration_seconds histogram")
      }))
  })
})

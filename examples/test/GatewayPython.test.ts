/**
 * The Python client of `gcx serve` (examples/gateway/client.py, standard
 * library only) against the real `gcx serve` (a separate process, embedded,
 * temporary folder) and a sandbox: it submits a quote, follows its events
 * through a connection that drops after the first event (so the client must
 * resume with `Last-Event-ID`), prints the values, and receives, verifies and
 * prints the quote's webhook. Run with Debian's `python3`.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import type { Scope } from "effect"
import { Effect, Schedule } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { freePort, root, run, startGateway } from "./utils/gateway.js"

/** Debian's interpreter when there (CI), else the one on PATH. */
const python = Fs.existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3"

const client = "examples/gateway/client.py"

/** A PIN that no log or output may hold. */
const pin = "7391"

/**
 * A TCP proxy to `target` that cuts the first event stream it carries right
 * after its first SSE message: the connection drops mid-quote, as a flaky
 * network or a restarted load balancer would do. For `outageMillis` after
 * that, it closes every connection at once, as a gateway that restarts.
 */
const droppingProxy = (
  target: URL,
  outageMillis = 0
): Effect.Effect<{ readonly url: string; readonly drops: () => number }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<Net.Server & { drops: number; downUntil: number }>((resume) => {
      const server = Object.assign(
        Net.createServer((downstream) => {
          if (Date.now() < server.downUntil) return void downstream.destroy()
          const upstream = Net.connect(Number(target.port), target.hostname)
          let isEvents = false
          let received = ""
          downstream.on("data", (chunk) => {
            isEvents ||= chunk.toString("latin1").startsWith("GET ") &&
              /^GET \S+\/events /.test(chunk.toString("latin1"))
            upstream.write(chunk)
          })
          upstream.on("data", (chunk) => {
            if (!isEvents || server.drops > 0) return void downstream.write(chunk)
            received += chunk.toString("latin1")
            // the end of the first message that has an id: forward up to there, then cut both ways
            const end = /\r\n\r\n[\s\S]*?id: [^\n]*\n[\s\S]*?\n\n/.exec(received)
            if (end === null) return
            server.drops++
            server.downUntil = Date.now() + outageMillis
            downstream.end(Buffer.from(received.slice(0, end.index + end[0].length), "latin1"))
            downstream.destroySoon()
            upstream.destroy()
          })
          upstream.on("end", () => downstream.end())
          upstream.on("error", () => downstream.destroy())
          downstream.on("error", () => upstream.destroy())
          downstream.on("close", () => upstream.destroy())
        }),
        { drops: 0, downUntil: 0 }
      )
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.sync(() => server.close())
  ).pipe(Effect.map((server) => ({
    url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`,
    drops: () => server.drops
  })))

/** A `Gcx-Signature` header for `body` signed with `secret` at `t` (unix seconds). */
const signature = (body: string, secret: string, t = Math.floor(Date.now() / 1000)) =>
  `t=${t},v1=${Crypto.createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`

/** POSTs a webhook `body` signed with `secret` to `url`, with `eventId` as its `Gcx-Event-Id`. */
const deliver = (url: string, secret: string, eventId: string, body: string) =>
  Effect.tryPromise(() =>
    fetch(url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "Gcx-Signature": signature(body, secret),
        "Gcx-Event-Id": eventId
      },
      body
    }).then((answer) => answer.status)
  )

/** Runs client.py with `args`, the key in its environment. */
const python3 = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  run(python, [client, ...args], { PYTHONDONTWRITEBYTECODE: "1", ...env })

/** The Python block of docs/gateway.md: the verifier documented for other receivers. */
const documented = /```python\n([\s\S]*?)```/.exec(Fs.readFileSync(Path.join(root, "docs", "gateway.md"), "utf8"))?.[1]

/** What `verify_webhook`, defined by `definition`, says of each `[header, body, secret]`. */
const verifyInPython = (definition: string, cases: ReadonlyArray<readonly [string, string, string]>) =>
  run(python, [
    "-c",
    `${definition}\nimport json, sys\n` +
    "print(json.dumps([verify_webhook(h, b.encode(), s) for h, b, s in json.loads(sys.argv[1])]))",
    JSON.stringify(cases)
  ], { PYTHONDONTWRITEBYTECODE: "1" })

describe("examples/gateway/client.py", () => {
  it.effect("verify_webhook (client.py's, and the docs' ten lines) accepts a Gcx-Signature over t.body; refuses a changed body, another secret, a stale t", () =>
    Effect.gen(function*() {
      const secret = `whsec_${"s".repeat(43)}`
      const body = `{"id":"evt_1","type":"quote.completed"}`
      const now = Math.floor(Date.now() / 1000)
      const sign = (t: number, text = body, key = secret) => signature(text, key, t)
      const cases = [
        [sign(now), body, secret],
        [`t=${now}, v1=${"0".repeat(64)}, ${sign(now).split(",")[1]}`, body, secret], // a rotation: two v1
        [sign(now), body + " ", secret],
        [sign(now), body, `${secret}x`],
        [sign(now - 301), body, secret],
        [sign(now).replace(`t=${now}`, `t=${now + 1}`), body, secret],
        ["", body, secret],
        [`v1=${sign(now).split("v1=")[1]}`, body, secret]
      ] as const
      expect(documented).toContain("def verify_webhook(")
      for (
        const definition of ["sys.path.insert(0, 'examples/gateway')\nfrom client import verify_webhook", documented!]
      ) {
        const result = yield* verifyInPython(`import sys\n${definition}`, cases)
        expect(result.code, result.stderr).toBe(0)
        expect(JSON.parse(result.stdout)).toEqual([true, true, false, false, false, false, false, false])
      }
    }))

  it.live("receive_webhook keeps a verified event once by its Gcx-Event-Id, only when the body's id is the same", () =>
    Effect.gen(function*() {
      const secret = `whsec_${"r".repeat(43)}`
      const port = yield* freePort
      const receiver = run(python, [
        "-c",
        "import sys, json, time\nsys.path.insert(0, 'examples/gateway')\nfrom client import receive_webhook\n" +
        `received = {}\nserver = receive_webhook(${port}, '${secret}', received)\n` +
        "print('ready', flush=True)\ntime.sleep(float(sys.argv[1]))\nserver.shutdown()\n" +
        "print(json.dumps(received), flush=True)",
        "3"
      ], { PYTHONDONTWRITEBYTECODE: "1" })
      const url = `http://127.0.0.1:${port}/`
      const event = (id: string, status: string) => JSON.stringify({ id, type: "quote.completed", data: { status } })
      const send = Effect.gen(function*() {
        return [
          yield* deliver(url, secret, "evt_a", event("evt_a", "first")),
          yield* deliver(url, secret, "evt_a", event("evt_a", "repeat")), // a retry: acknowledged, not kept again
          yield* deliver(url, secret, "evt_b", event("evt_c", "mismatch")), // header and body disagree: ignored
          yield* deliver(url, `${secret}x`, "evt_d", event("evt_d", "forged")) // not verified: 400
        ]
      }).pipe(Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 40 }))
      const [result, statuses] = yield* Effect.all([receiver, send], { concurrency: 2 })
      expect(result.code, result.stderr).toBe(0)
      expect(statuses).toEqual([204, 204, 204, 400])
      expect(JSON.parse(result.stdout.split("\n")[1]!)).toEqual({
        evt_a: { id: "evt_a", type: "quote.completed", data: { status: "first" } }
      })
    }))

  layer(Sandbox.layer({ timeScale: 0.25, logLevel: "None" }), { excludeTestServices: true, timeout: 120_000 })(
    "against gcx serve",
    (it) => {
      it.effect(
        "submits, follows the events across a dropped stream and a 4 s outage without gap or repeat, verifies the webhook",
        () =>
          Effect.gen(function*() {
            const sandbox = yield* Sandbox.SandboxServer
            const hookPort = yield* freePort
            const gateway = yield* startGateway(sandbox, { webhook: `http://127.0.0.1:${hookPort}/hooks/gcx` })
            // down for 4 s after the drop, as a gateway that restarts: the client waits for it
            const proxy = yield* droppingProxy(new URL(gateway.url), 4_000)
            const card = TestData.Cards.success
            // a late retry of an earlier quote's webhook, verified, arrives first: not this quote's
            const earlier = `evt_${"0a".repeat(16)}`
            const late = deliver(
              `http://127.0.0.1:${hookPort}/hooks/gcx`,
              gateway.webhookSecret!,
              earlier,
              JSON.stringify({ id: earlier, type: "quote.failed", created: 0, data: { id: "0a", status: "failed" } })
            ).pipe(Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 400 }))
            const [result, lateStatus] = yield* Effect.all([
              python3(
                ["--url", proxy.url, "--card", card, "--pin", pin, "--webhook-port", String(hookPort)],
                { GCX_GATEWAY_KEY: gateway.apiKey, GCX_WEBHOOK_SECRET: gateway.webhookSecret! }
              ),
              late
            ], { concurrency: 2 })
            expect(lateStatus).toBe(204)
            expect(result.stderr).toContain(`webhook ${earlier} ignored: not this quote's`)
            expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0)
            const lines = result.stdout.trim().split("\n")
            const id = /^submitted (\w+) \(pending\)$/.exec(lines[0]!)?.[1]
            expect(id, result.stdout).toBeDefined()

            // the stream dropped once, after the first event, and the client resumed after it
            expect(proxy.drops()).toBe(1)
            expect(result.stderr).toMatch(/^stream dropped .*; resuming after event 1$/m)
            // every event once, in order: ids 1, 2, … n, the last one the terminal one
            const events = lines.filter((line) => line.startsWith("event "))
            const ids = events.map((line) => Number(line.split(" ")[1]))
            expect(ids).toEqual(ids.map((_, index) => index + 1))
            expect(events[0]).toBe("event 1 submitted")
            expect(events.some((line) => /^event \d+ progress \d+% /.test(line))).toBe(true)
            expect(events.at(-1)).toMatch(/^event \d+ completed$/)

            expect(lines).toContainEqual(
              expect.stringMatching(
                new RegExp(`^completed ${id}: actual 100\\.00, exchange 85\\.00 \\(transaction \\S+\\)$`)
              )
            )
            expect(lines.at(-1)).toBe(`webhook evt_${id} quote.completed verified: completed`)

            // no card data anywhere: the client's output, the gateway's logs
            for (const text of [result.stdout, result.stderr, gateway.output()]) {
              expect(text).not.toContain(card)
              expect(text).not.toContain(pin)
            }
          }),
        { timeout: 120_000 }
      )

      it.effect(
        "a spent rate limit (429 with Retry-After) is waited out: the quote is followed to its end",
        () =>
          Effect.gen(function*() {
            const sandbox = yield* Sandbox.SandboxServer
            // one request at once, one every 2 s: the event stream right after the POST is refused
            const gateway = yield* startGateway(sandbox, { keyFlags: ["--rate", "0.5", "--burst", "1"] })
            const result = yield* python3(
              ["--url", gateway.url, "--card", TestData.Cards.instant, "--pin", pin],
              { GCX_GATEWAY_KEY: gateway.apiKey }
            )
            expect(result.code, result.stderr).toBe(0)
            expect(result.stderr).toMatch(/^stream dropped \(429 rate_limited: .*\); resuming from the start$/m)
            expect(result.stdout).toMatch(/^completed \w+: actual 50\.00, exchange 42\.50 /m)
          }),
        { timeout: 120_000 }
      )

      it.effect(
        "an Idempotency-Key reused with another card, and a wrong key, end with the error's code; --wait gets the outcome from the POST",
        () =>
          Effect.gen(function*() {
            const sandbox = yield* Sandbox.SandboxServer
            const gateway = yield* startGateway(sandbox)
            const env = { GCX_GATEWAY_KEY: gateway.apiKey }
            const submit = (card: string, key: Record<string, string> = env) =>
              python3(["--url", gateway.url, "--card", card, "--pin", pin, "--idempotency-key", "order-1042"], key)
            const first = yield* submit(TestData.Cards.instant)
            expect(first.code, first.stderr).toBe(0)
            expect(first.stdout).toMatch(/^completed \w+: actual 50\.00, exchange 42\.50 /m)
            // --wait: the POST answers the outcome (Prefer: wait), no event stream; the same quote again
            const waited = yield* python3(
              [
                "--url",
                gateway.url,
                "--card",
                TestData.Cards.instant,
                "--pin",
                pin,
                "--idempotency-key",
                "order-1042",
                "--wait",
                "10"
              ],
              env
            )
            expect(waited.code, waited.stderr).toBe(0)
            const firstId = /^submitted (\w+) /.exec(first.stdout)![1]
            expect(waited.stdout.trim().split("\n")).toEqual([
              `submitted ${firstId} (completed)`,
              expect.stringMatching(new RegExp(`^completed ${firstId}: actual 50\\.00, exchange 42\\.50 `))
            ])
            // replayed without --wait once ended: the 202 says completed, the values come from GET
            const replayed = yield* submit(TestData.Cards.instant)
            expect(replayed.code, replayed.stderr).toBe(0)
            expect(replayed.stdout.trim().split("\n")).toEqual([
              `submitted ${firstId} (completed)`,
              expect.stringMatching(new RegExp(`^completed ${firstId}: actual 50\\.00, exchange 42\\.50 `))
            ])
            const fresh = yield* python3(
              ["--url", gateway.url, "--card", TestData.Cards.success, "--pin", pin, "--wait", "10"],
              env
            )
            expect(fresh.code, fresh.stderr).toBe(0)
            expect(fresh.stdout).toMatch(
              /^submitted \w+ \(completed\)\ncompleted \w+: actual 100\.00, exchange 85\.00 /
            )
            // a failed quote's exit code is its group's, as the CLI's: merchant 4
            const merchant = yield* python3(
              ["--url", gateway.url, "--card", TestData.Cards.merchantUnavailable, "--pin", pin],
              env
            )
            expect(merchant.code, merchant.stderr).toBe(4)
            expect(merchant.stdout).toMatch(/^failed \w+: /m)
            const reused = yield* submit(TestData.Cards.success)
            expect(reused.code).toBe(2)
            expect(reused.stderr.trim()).toMatch(/^client\.py: the gateway refused: 409 idempotency_key_reused: /)
            const unknown = yield* submit(TestData.Cards.success, { GCX_GATEWAY_KEY: `gcx_sk_${"A".repeat(43)}` })
            expect(unknown.code).toBe(2)
            expect(unknown.stderr.trim()).toMatch(/^client\.py: the gateway refused: 401 unauthorized: /)
            const missing = yield* python3(["--card", TestData.Cards.success, "--pin", pin], {})
            expect(missing.code).toBe(2)
            expect(missing.stderr).toContain("GCX_GATEWAY_KEY is not set")
          }),
        { timeout: 120_000 }
      )
    }
  )
})

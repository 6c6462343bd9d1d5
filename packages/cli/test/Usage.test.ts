/**
 * Usage errors, in process (`Cli.main`): one `error:` line that names the
 * flag or the variable and ends with `(see gcx <command> --help)`, never a
 * usage or schema tree; an unreachable host is named with the cause; and the
 * pure pieces behind what gcx prints (escapes, durations, `--log-level`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import * as Output from "../src/Output.js"
import * as Render from "../src/Render.js"
import * as Text from "../src/Text.js"
import { expectOneErrorLine, gcxInProcess, lines } from "./helpers.js"

const card = ["--card", "6006000000000001", "--pin", "1234", "--product", "1000"]

/** The configuration of a service that is not there: nothing listens on port 9 (discard). */
const unreachable = {
  GCX_BASE_URL: "http://127.0.0.1:9",
  GCX_AUTH_URL: "http://127.0.0.1:9",
  GCX_CLIENT_ID: "someone",
  GCX_CLIENT_SECRET: "not-a-real-secret",
  GCX_API_KEY: "not-a-real-key"
}

describe("usage errors", () => {
  it.live("each is one error: line naming the flag or variable, with the help hint", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, Record<string, string>, string, string]> = [
        [["quote", ...card, "--deadline", "abc"], {}, "--deadline must be a number above 0, got 'abc'", "quote"],
        [["quote", ...card, "--poll-interval", "-5"], {}, "--poll-interval must be a whole number above 0", "quote"],
        [["quote", "--card", "1", "--pin", "2"], {}, "--product", "quote"],
        [["quote", ...card, "--env", "moon"], {}, "--env must be one of sandbox, production, custom", "quote"],
        [
          ["batch", "cards.csv", "--concurrency", "0"],
          {},
          "--concurrency must be a whole number of at least 1",
          "batch"
        ],
        [["sandbox", "--port", "70000"], {}, "--port must be a whole number from 0 to 65535", "sandbox"],
        [["heartbeat", "--bogus"], {}, "--bogus", "heartbeat"],
        [["heartbeat"], { GCX_BASE_URL: "not-a-url" }, "GCX_BASE_URL must be an absolute http(s) URL", "heartbeat"],
        [["quote", "--card", " ", "--pin", "1", "--product", "1000"], {}, "cardNumber", "quote"],
        [
          ["quote", ...card],
          { GCX_SANDBOX_TIME_SCALE: "fast" },
          "GCX_SANDBOX_TIME_SCALE must be a number above 0",
          "quote"
        ],
        [
          ["batch", "cards.csv", "--out", "/missing/dir/r.jsonl"],
          {},
          "--out /missing/dir/r.jsonl: the folder /missing/dir does not exist",
          "batch"
        ],
        [
          ["sandbox", "--fault", "createQuote:status530:0.2"],
          {},
          "--fault createQuote:status530:0.2: unknown kind 'status530' (kinds: status503, status500",
          "sandbox"
        ],
        [["sandbox", "--fault", "createQuote:status503:2"], {}, "p: expected a value between 0 and 1", "sandbox"],
        [
          ["sandbox", "--max-transactions", "0"],
          {},
          "--max-transactions must be a whole number of at least 1",
          "sandbox"
        ],
        [["runner"], {}, "GCX_RUNNER_ADDRESS is not set: set it, or --listen, to the host:port", "runner"],
        [["runner", "--listen", "nowhere"], {}, "--listen must be host:port, got 'nowhere'", "runner"],
        [["runner"], { GCX_RUNNER_ADDRESS: "runner-1" }, "GCX_RUNNER_ADDRESS must be host:port", "runner"],
        [["serve", "--port", "70000"], {}, "--port", "serve"],
        [["serve", "--embedded"], {}, "GCX_DATA_KEY", "serve"],
        [
          ["serve", "--embedded"],
          { GCX_GATEWAY_PORT: "70000" },
          "GCX_GATEWAY_PORT must be a port, 0 to 65535",
          "serve"
        ],
        [
          ["serve", "--embedded"],
          { GCX_GATEWAY_MAX_HELD_PER_KEY: "0" },
          "GCX_GATEWAY_MAX_HELD_PER_KEY must be a whole number of at least 1",
          "serve"
        ],
        [["quote", ...card, "--previous-attempts", "2"], {}, "--previous-attempts needs --request-id", "quote"],
        [
          ["quote", ...card, "--request-id", "r-1", "--previous-attempts", "1.5"],
          {},
          "--previous-attempts must be a whole number of at least 0, got '1.5'",
          "quote"
        ],
        [
          ["quote", ...card, "--durable", "--request-id", "r-1", "--previous-attempts", "2"],
          {},
          "--previous-attempts is for a quote without --durable",
          "quote"
        ],
        [["result"], {}, "requestId", "result"],
        [["result", "abc", "--timeout", "0"], {}, "--timeout must be a number above 0", "result"],
        [["result", ""], {}, "the requestId must be 1 to 64 visible characters", "result"],
        // a nested subcommand's own help
        [["serve", "keys", "create"], {}, "--name", "serve keys create"]
      ]
      for (const [args, env, fragment, command] of cases) {
        const output = yield* gcxInProcess(args, { GCX_SANDBOX_TIME_SCALE: "0.02", ...env })
        expect(output.code, args.join(" ")).toBe(2)
        const reported = expectOneErrorLine(output.stderr, fragment)
        expect(reported.endsWith(`(see gcx ${command} --help)`), args.join(" ")).toBe(true)
        // no usage or schema tree
        expect(output.stderr).not.toMatch(/└─|USAGE|Predicate refinement|at \["/)
        // the sandbox stands in for the connection settings only
        if (!fragment.startsWith("GCX_BASE_URL")) expect(reported, args.join(" ")).not.toContain("--embedded")
      }
    }))

  it.live("an unreachable host is named, with the cause", () =>
    Effect.gen(function*() {
      const heartbeat = yield* gcxInProcess(["heartbeat"], unreachable)
      expect(heartbeat.code).toBe(5)
      expect(lines(heartbeat.stderr)).toHaveLength(1)
      expect(heartbeat.stderr).toMatch(/^error: .*host 127\.0\.0\.1:9: ECONNREFUSED 127\.0\.0\.1:9\n$/)
      expect(heartbeat.stderr).not.toContain("not-a-real")
    }))
})

describe("what gcx prints", () => {
  it("escapes every control character to a visible form", () => {
    expect(Text.safe("a\u001b]0;title\u0007b\u001b[2Jc\u009b31m\u202ed\ne")).toBe(
      "a\\x1b]0;title\\x07b\\x1b[2Jc\\x9b31m\\u202ed\\x0ae"
    )
    const json = Text.json({ message: "\u001b[2J\u009b\u2028" })
    expect(json).toBe("{\"message\":\"\\u001b[2J\\u009b\\u2028\"}")
    expect(JSON.parse(json)).toEqual({ message: "\u001b[2J\u009b\u2028" })
    expect(Text.stripAnsi("\u001b[0;1mUSAGE\u001b[0m \u001b]0;t\u0007x")).toBe("USAGE x")
  })

  it("prints durations as 229 ms or 1.2 s", () => {
    expect(Render.duration(Duration.millis(229))).toBe("229 ms")
    expect(Render.duration(Duration.millis(1200))).toBe("1.2 s")
    expect(Render.duration(Duration.millis(2000))).toBe("2 s")
    expect(Render.duration(Duration.seconds(42.4))).toBe("42 s")
  })

  it("reads --log-level anywhere before --", () => {
    expect(Output.hoistLogLevel(["node", "gcx", "quote", "--json", "--log-level", "debug"]))
      .toEqual(["node", "gcx", "--log-level", "debug", "quote", "--json"])
    expect(Output.hoistLogLevel(["node", "gcx", "quote", "--log-level=info", "--", "--log-level", "x"]))
      .toEqual(["node", "gcx", "--log-level=info", "quote", "--", "--log-level", "x"])
    expect(Option.isSome(Output.logLevelOf(["node", "gcx", "watch", "--log-level", "debug"]))).toBe(true)
    expect(Output.logLevelOf(["node", "gcx", "watch"])).toEqual(Option.none())
  })
})

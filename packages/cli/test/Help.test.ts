/**
 * The help of every command, in process (`Cli.main`): the summary, the flags with their metavars, the
 * variables the command reads with their formats, and the exit codes; `gcx --help` lists every command
 * with its one-line description; `--version` prints the version alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cli from "../src/Cli.js"
import * as Help from "../src/Help.js"
import { gcxInProcess } from "./helpers.js"

/** The variables each command's help must name. */
const durable = ["GCX_DATABASE_URL", "GCX_DATABASE_FILE", "GCX_DATA_KEY", "GCX_DATA_KEY_PREVIOUS"]
const connection = ["GCX_BASE_URL", "GCX_AUTH_URL", "GCX_CLIENT_ID", "GCX_CLIENT_SECRET", "GCX_API_KEY"]
const expected: Readonly<Record<(typeof Help.commands)[number], ReadonlyArray<string>>> = {
  heartbeat: connection,
  quote: [...connection, ...durable, "GCX_SANDBOX_TIME_SCALE"],
  watch: connection,
  batch: [...connection, ...durable, "GCX_BATCH_KEY"],
  result: [...connection, ...durable],
  sandbox: ["GCX_SANDBOX_ADMIN_KEY"],
  runner: [
    ...connection,
    "GCX_DATABASE_URL",
    "GCX_DATA_KEY",
    "GCX_DATA_KEY_PREVIOUS",
    "GCX_RUNNER_ADDRESS",
    "GCX_RUNNER_LISTEN"
  ],
  serve: [...connection, ...durable, "GCX_GATEWAY_PORT"]
}

/** The section of a help text from `title` to the next section. */
const section = (help: string, title: string): string => {
  const start = help.indexOf(`\n${title}\n`)
  expect(start, title).toBeGreaterThanOrEqual(0)
  const rest = help.slice(start + title.length + 2)
  const end = rest.search(/\n[A-Z][A-Z ]+\n/)
  return end < 0 ? rest : rest.slice(0, end)
}

describe("help", () => {
  it.effect("every command's help lists its variables with their formats, and the exit codes", () =>
    Effect.gen(function*() {
      for (const command of Help.commands) {
        const output = yield* gcxInProcess([command, "--help"])
        expect(output.code, command).toBe(0)
        expect(output.stdout, command).toContain(`gcx ${command} [flags]`)
        const environment = section(output.stdout, "ENVIRONMENT")
        for (const name of [...expected[command], "NO_COLOR"]) {
          expect(environment, `${command}: ${name}`).toMatch(new RegExp(`^${name}$`, "m"))
        }
        const codes = section(output.stdout, "EXIT CODES")
        for (const code of [0, 1, 2, 3, 4, 5, 130]) expect(codes, command).toMatch(new RegExp(`^${code}$`, "m"))
        if (expected[command].includes("GCX_DATA_KEY")) {
          expect(environment, command).toContain("32 random bytes in base64, made with `openssl rand -base64 32`")
        }
      }
    }))

  it.effect("gcx runner --help shows --listen host:port; gcx sandbox --help the flags of pnpm sandbox", () =>
    Effect.gen(function*() {
      const runner = yield* gcxInProcess(["runner", "--help"])
      expect(runner.stdout).toMatch(/^ {2}--listen host:port {2,}host:port to listen on/m)
      // A runner never falls back to the embedded sandbox: its help must not call it the default.
      const embedded = runner.stdout.split("\n").find((line) => line.trimStart().startsWith("--embedded")) ?? ""
      expect(embedded).toContain("runner, serve and a client-only --durable only with --embedded")
      expect(embedded).not.toMatch(/the default when/)
      const sandbox = yield* gcxInProcess(["sandbox", "--help"])
      expect(sandbox.stdout).toMatch(/^ {2}--max-transactions n /m)
      expect(sandbox.stdout).toMatch(/^ {2}--max-dashboard-streams n /m)
    }))

  it.effect("gcx --help lists every command with a one-line description, aligned in one column", () =>
    Effect.gen(function*() {
      const output = yield* gcxInProcess(["--help"])
      const listed = section(output.stdout, "SUBCOMMANDS").split("\n").filter((line) => line.trim() !== "")
      expect(listed.map((line) => line.trim().split(/\s+/)[0])).toEqual([...Help.commands])
      const columns = new Set(listed.map((line) => line.search(/(?<=\S {2,})\S/)))
      expect(columns.size).toBe(1)
      for (const line of listed) expect(line.length, line).toBeLessThanOrEqual(80)
    }))

  it.effect("--version prints the version alone, with no blank line", () =>
    Effect.gen(function*() {
      const output = yield* gcxInProcess(["--version"])
      expect(output.stdout).toBe(`${Cli.version}\n`)
    }))
})

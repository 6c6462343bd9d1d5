/**
 * `pnpm sandbox`: runs the sandbox (default 127.0.0.1:4010), prints its URLs
 * and the test credentials, and stops cleanly on SIGINT or SIGTERM: the
 * servers close and the process exits with code 0, with nothing on stderr.
 * Bad arguments exit with code 2 and the usage on stderr.
 *
 * Run it with `tsx packages/sandbox/src/bin.ts [options]`; `--help` lists the
 * options.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Routes } from "@gcx/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { adminKeyHeader, adminPrefix } from "./Api.js"
import * as Args from "./internal/args.js"
import * as Sandbox from "./Sandbox.js"
import * as TestData from "./TestData.js"

const banner = (server: Sandbox.Service): string =>
  [
    "gcx sandbox is running",
    `  API          ${server.baseUrl}`,
    `  Quote        ${server.baseUrl}${Routes.quotePath(server.stage)} (also without /${server.stage})`,
    `  Token        ${server.authUrl}${Routes.tokenPath}`,
    `  OpenAPI      ${server.baseUrl}/openapi.json`,
    `  Docs         ${server.baseUrl}/docs`,
    `  Admin        ${server.baseUrl}${adminPrefix}/  (${adminKeyHeader}: ${server.adminKey})`,
    "Test partners (client_id / client_secret / x-api-key):",
    ...TestData.partners.map((partner) =>
      `  ${partner.clientId} / ${partner.clientSecret} / ${partner.apiKey}${
        partner.agent === undefined ? "" : "  (human-based balance inquiries)"
      }`
    ),
    `Product lines: ${TestData.productLines.map((line) => line.id).join(", ")}`,
    "Cards (any PIN; PIN 0000 always gives exchange.invalid.card):",
    ...Object.entries(TestData.Cards).map(([name, number]) => `  ${number}  ${name}`),
    "  any other         success, balance derived from the number",
    "Press Ctrl+C to stop."
  ].join("\n")

const main = Either.match(Args.parse(process.argv.slice(2)), {
  onLeft: (problem) =>
    Effect.zipRight(
      Console.error(`${problem}\n\n${Args.usage}`),
      Effect.sync(() => {
        process.exitCode = 2
      })
    ),
  onRight: (options) =>
    options === "help"
      ? Console.log(Args.usage)
      : Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* Console.log(banner(server))
        return yield* Effect.never
      }).pipe(Effect.provide(Sandbox.layer(options)))
})

NodeRuntime.runMain(main)

/**
 * `gcx serve [--port N] [--host H]`: the durable quote engine as an HTTP
 * service (`@gcx/gateway`), until Ctrl-C or SIGTERM (`run/Serve`, loaded when
 * the command runs). Embedded on SQLite by default; a client-only node of the
 * runners of `GCX_DATABASE_URL` when it is set. It serves other backends, so
 * it never falls back to the embedded sandbox: the connection settings are
 * required (or `--embedded`).
 *
 * Its subcommands (`gcx serve keys …`) are listed in `command`.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as GcxFlag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as ServeKeys from "./ServeKeys.js"

/** The port `gcx serve` listens on unless told (`--port`, `GCX_GATEWAY_PORT`). */
export const defaultPort = 8790

/** The flags of `gcx serve`. */
export const options = {
  port: GcxFlag.number("port", "n", { integer: true, min: 0, max: 65535 }).pipe(
    Flag.withDescription(`port to listen on (default GCX_GATEWAY_PORT, else ${defaultPort}; 0: a free port)`),
    Flag.optional
  ),
  host: Flag.String("host").pipe(
    Flag.withMetavar("host"),
    Flag.withDescription("interface to listen on (default 127.0.0.1; 0.0.0.0 for every interface)"),
    Flag.optional
  ),
  connection: ConnectionFlags.options
}

/** The parsed flags of `gcx serve`. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `serve` command without its subcommands. */
export const base = Command.make("serve", options, Lazy.handler(() => import("../run/Serve.js"))).pipe(
  Help.describe(
    "Serve durable quotes over HTTP (POST /v1/quotes, GET /v1/quotes/{id}, its events; /openapi.json, /docs, " +
      "/healthz, /readyz) for backends in any language, authenticated with API keys. Embedded on SQLite, or " +
      "client-only on the runners of GCX_DATABASE_URL. It serves others: the connection settings are required, " +
      "and the embedded sandbox is used only with --embedded",
    [
      ["GCX_GATEWAY_PORT", `port to listen on, 0 to 65535 (default ${defaultPort}; --port wins)`],
      [
        "GCX_GATEWAY_MAX_HELD_PER_KEY",
        "how many open event streams and waiting POSTs one API key may hold at once (default 1000)"
      ],
      Help.durableVariables.clientDatabaseUrl,
      Help.durableVariables.databaseFile,
      ServeKeys.keysFileVariable,
      Help.durableVariables.dataKey,
      Help.durableVariables.previousDataKey,
      ...Help.connectionVariables.filter(([name]) => name !== "GCX_SANDBOX_TIME_SCALE")
    ]
  ),
  Command.withShortDescription("Serve durable quotes over HTTP"),
  Help.runsAlone
)

/** The `serve` command: `base` with its subcommand `keys` (`gcx serve keys create|list|revoke`). Without one it serves. */
export const command = base.pipe(Command.withSubcommands([ServeKeys.command]))

/**
 * `gcx runner`: a cluster runner of durable quotes on PostgreSQL (`GCX_DATABASE_URL`). It runs the
 * quotes of the shards it owns until stopped (SIGTERM or Ctrl-C: it finishes its current steps and
 * hands its shards over). It listens on `--listen host:port` and is reached at `GCX_RUNNER_ADDRESS`
 * (default: the listen address). The card is opened with `GCX_DATA_KEY`, or with
 * `GCX_DATA_KEY_PREVIOUS` for the cards sealed before a key rotation. It serves other nodes, so it
 * never falls back to the embedded sandbox: the connection settings are required (or `--embedded`).
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

/** The flags of `gcx runner`. */
export const options = {
  listen: Flag.String("listen").pipe(
    Flag.withMetavar("host:port"),
    Flag.withDescription("host:port to listen on for the other nodes (default: GCX_RUNNER_ADDRESS)"),
    Flag.optional
  ),
  insecureLoopback: Flag.Boolean("insecure-loopback").pipe(
    Flag.withDescription("without TLS certificates: plain TCP, on a loopback --listen only (one machine)"),
    Flag.withDefault(false)
  ),
  connection: ConnectionFlags.options
}

/** The parsed flags of `gcx runner`. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `runner` command: its handler is loaded on demand, so that the other commands never load the cluster's socket and PostgreSQL modules. */
export const command = Command.make("runner", options, Lazy.handler(() => import("../RunnerNode.js"))).pipe(
  Help.describe(
    "Run durable quotes as a cluster runner on PostgreSQL (GCX_DATABASE_URL). It serves other nodes: the " +
      "connection settings are required, and the embedded sandbox is used only with --embedded",
    [
      Help.durableVariables.databaseUrl,
      Help.durableVariables.dataKey,
      Help.durableVariables.previousDataKey,
      ["GCX_RUNNER_ADDRESS", "host:port the other nodes reach this runner at (required, or --listen)"],
      ["GCX_RUNNER_LISTEN", "host:port to listen on, when it is not GCX_RUNNER_ADDRESS (as --listen, which wins)"],
      ["GCX_RUNNER_TLS_CA", "the cluster's CA certificate (PEM or file; required unless --insecure-loopback)"],
      ["GCX_RUNNER_TLS_CERT", "this node's certificate, signed by the CA (PEM or file)"],
      ["GCX_RUNNER_TLS_KEY", "this node's private key (PEM or file; secret)"],
      ["GCX_RUNNER_MAX_FRAME_BYTES", "the longest frame a cluster connection may send (default 1048576)"],
      ...Help.connectionVariables.filter(([name]) => name !== "GCX_SANDBOX_TIME_SCALE")
    ]
  ),
  Command.withShortDescription("Run durable quotes as a cluster runner on PostgreSQL")
)

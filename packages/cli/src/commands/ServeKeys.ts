/**
 * `gcx serve keys create|list|revoke|rotate-secret`: the API keys of `gcx serve`'s callers (`run/ServeKeys`, loaded
 * when a command runs), where `gcx serve` reads them: the embedded gateway's keys file
 * (`GCX_GATEWAY_KEYS_FILE`, default `gateway-keys.db` beside `GCX_DATABASE_FILE`), shared with a
 * running `gcx serve`, or the PostgreSQL of `GCX_DATABASE_URL`. `create` prints the key and each
 * webhook secret once; `list` never prints a key or a secret.
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as GcxFlag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import type * as Run from "../run/ServeKeys.js"

const json = Flag.Boolean("json").pipe(Flag.withDescription("print one JSON object"), Flag.withDefault(false))

/** The flags of `gcx serve keys create`. */
export const createOptions = {
  name: Flag.String("name").pipe(
    Flag.withMetavar("name"),
    Flag.withDescription("a name for people (1 to 100 characters)")
  ),
  rate: GcxFlag.number("rate", "per second", { min: 0, above: true }).pipe(
    Flag.withDescription("sustained requests a second (default 20)"),
    Flag.optional
  ),
  burst: GcxFlag.number("burst", "n", { integer: true, min: 1 }).pipe(
    Flag.withDescription("requests allowed at once, the size of the bucket (default 40)"),
    Flag.optional
  ),
  webhook: Flag.String("webhook").pipe(
    Flag.withMetavar("url"),
    Flag.withDescription(
      "an endpoint that receives the outcomes of the key's quotes, signed, repeatable (https; http only on " +
        "loopback: 127.0.0.1, localhost, [::1])"
    ),
    Flag.atLeast(0)
  ),
  json
}

/** The argument and flags of `gcx serve keys revoke`. */
export const revokeOptions = {
  json,
  id: Argument.String("id").pipe(
    Argument.withDescription("the key's id (key_…), as gcx serve keys list shows it; or the key itself (gcx_sk_…)")
  )
}

/** The argument and flags of `gcx serve keys rotate-secret`. */
export const rotateSecretOptions = {
  json,
  overlap: GcxFlag.number("overlap", "hours", { min: 0, max: 168 }).pipe(
    Flag.withDescription(
      "hours the replaced secret still signs deliveries beside the new one (default 24; 0 ends it at once, for a " +
        "leaked secret)"
    ),
    Flag.optional
  ),
  id: Argument.String("webhook-id").pipe(
    Argument.withDescription("the webhook endpoint's id (wh_…), as gcx serve keys list shows it")
  )
}

/** The parsed flags of `gcx serve keys create`. */
export type CreateFlags = Command.Command.Config.Infer<typeof createOptions>

/** The parsed argument and flags of `gcx serve keys revoke`. */
export type RevokeFlags = Command.Command.Config.Infer<typeof revokeOptions>

/** The parsed argument and flags of `gcx serve keys rotate-secret`. */
export type RotateSecretFlags = Command.Command.Config.Infer<typeof rotateSecretOptions>

/** `GCX_GATEWAY_KEYS_FILE`: where an embedded `gcx serve` and `gcx serve keys` keep the keys. */
export const keysFileVariable: Help.Variable = [
  "GCX_GATEWAY_KEYS_FILE",
  "SQLite file of the API keys and webhook endpoints of the embedded gcx serve (default gateway-keys.db in the " +
  "folder of GCX_DATABASE_FILE); gcx serve keys changes it while gcx serve runs"
]

/** The variables of the keys commands: the database, and the data key that seals webhook secrets. */
const variables: ReadonlyArray<Help.Variable> = [
  [
    "GCX_DATABASE_URL",
    "PostgreSQL of the gateway, postgres://user:password@host:5432/database (secret): set, the keys are kept " +
    "there; unset, in the file GCX_GATEWAY_KEYS_FILE"
  ],
  keysFileVariable,
  [
    "GCX_DATABASE_FILE",
    "SQLite file of the embedded gcx serve's quotes (default .gcx/gcx.db): the keys file is beside it"
  ],
  [
    "GCX_DATA_KEY",
    "the gateway's data key, which seals the webhook secrets (and the cards): the same as gcx serve's " +
    "(required; secret)"
  ],
  [
    "GCX_DATA_KEY_PREVIOUS",
    "the key before a rotation: opens the webhook secrets it sealed; only a start of gcx serve seals them again " +
    "(secret)"
  ]
]

/** A handler of `run/ServeKeys`, imported when the command runs. */
const handler = <Config, E, R>(pick: (module: typeof Run) => Lazy.HandlerModule<Config, E, R>["handler"]) =>
  Lazy.handler(() => import("../run/ServeKeys.js").then((module) => ({ handler: pick(module) })))

/** A keys command's help: its summary, the one-line summary of `gcx serve keys --help`, the variables. */
const described = (summary: string, short: string) =>
<const Name extends string, Input, ContextInput, E, R>(
  command: Command.Command<Name, Input, ContextInput, E, R>
) => command.pipe(Help.describe(summary, variables), Command.withShortDescription(short))

const create = Command.make("create", createOptions, handler((run) => run.create)).pipe(
  described(
    "Make an API key for gcx serve's callers, with its rate limit and webhook endpoints. The key and each " +
      "webhook secret are printed once: they are kept hashed and sealed, never shown again",
    "Make an API key (printed once)"
  )
)

const list = Command.make("list", { json }, handler((run) => run.list)).pipe(
  described(
    "List the API keys: id, name, rate, burst, webhook URLs, created, revoked. Never a key or secret",
    "List the API keys"
  )
)

const revoke = Command.make("revoke", revokeOptions, handler((run) => run.revoke)).pipe(
  described(
    "Revoke an API key: every gateway refuses it within 5 seconds (its cache of authenticated keys). " +
      "An unknown id exits 2",
    "Revoke an API key"
  )
)

const rotateSecret = Command.make("rotate-secret", rotateSecretOptions, handler((run) => run.rotateSecret)).pipe(
  described(
    "Give a webhook endpoint a new secret, printed once. The replaced secret still signs its deliveries for " +
      "--overlap hours (each delivery carries both signatures), so that the receiver can move to the new one " +
      "without refusing a delivery. The API key and its quotes are unchanged",
    "Rotate a webhook endpoint's secret (printed once)"
  )
)

/** The `keys` command, under `gcx serve`: `create`, `list`, `revoke`, `rotate-secret`. */
export const command = Command.make("keys").pipe(
  Help.describe(
    "Manage the API keys of gcx serve's callers: embedded, in the file GCX_GATEWAY_KEYS_FILE, which these " +
      "commands change while gcx serve runs; scaled out, in the PostgreSQL of GCX_DATABASE_URL",
    variables
  ),
  Command.withShortDescription("Manage the API keys of gcx serve's callers"),
  Command.withSubcommands([create, list, revoke, rotateSecret])
)

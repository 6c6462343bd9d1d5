/**
 * The keys of `gcx serve` as its `keys` commands open them (`run/ServeKeys`):
 * in the PostgreSQL of `GCX_DATABASE_URL` when set, else in the embedded
 * gateway's keys file (`GCX_GATEWAY_KEYS_FILE`, default `gateway-keys.db`
 * beside `GCX_DATABASE_FILE`), with where they are; never sealed again under
 * the shell's data keys.
 */
import * as ApiKeys from "@gcx/gateway/ApiKeys"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as Database from "@gcx/workflow/Database"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlError from "effect/sql/SqlError"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as DatabaseFailure from "../DatabaseFailure.js"
import * as DurableDeployment from "../DurableDeployment.js"
import * as ExitCode from "../ExitCode.js"
import * as Text from "../Text.js"

/** The database failed: one line that names it (never the URL's password), exit 5. */
const unavailable = (message: string) =>
  new ExitCode.CliError({ code: ExitCode.ExitCode.ServiceFailure, message: Text.safe(message) })

/** How opening the database fails, or the webhook secrets under it (sealed under another data key). */
type Failure = Database.DatabaseUnreachable | SqlError.SqlError | CardCipher.UnsealError

/** Where the keys of `gcx serve` are, as its commands name it. */
export class KeysLocation extends Context.Service<KeysLocation, string>()("gcx/run/KeysStore/KeysLocation") {}

/** The absolute path of the embedded gateway's keys file for the quotes' file `databaseFile` (`ApiKeys.fileConfig`). */
export const keysFile = (databaseFile: string): Config.Config<string> =>
  Config.map(ApiKeys.fileConfig(databaseFile), (file) => Path.resolve(file))

/** The keys commands open the keys as they are: never sealed again under this shell's data keys. */
const keysOptions: ApiKeys.Options = { resealWebhooks: false }

/**
 * The keys of `gcx serve`: in the PostgreSQL of `GCX_DATABASE_URL`, else in
 * the embedded gateway's keys file; and where they are (the file's absolute
 * path: the default follows the working directory). A file that does not
 * exist is made by `create` only: the others fail naming it (a command run
 * in another folder than the gateway's, most likely), exit 2.
 */
const keysOfDeployment = (make: boolean) =>
  Effect.gen(function*() {
    const url = yield* DurableDeployment.databaseUrl
    if (Option.isSome(url)) {
      return {
        layer: ApiKeys.layerWith(keysOptions).pipe(Layer.provide(Database.layer(url.value))),
        location: DurableDeployment.where(url.value)
      }
    }
    const location = yield* keysFile(yield* DurableDeployment.databaseFile)
    if (!make && !Fs.existsSync(location)) {
      return yield* new ExitCode.CliError({
        code: ExitCode.ExitCode.Usage,
        message: `no keys file at ${Text.safe(location)}: gcx serve's first line names the file it reads ` +
          "(run this command in its folder, or set GCX_GATEWAY_KEYS_FILE or GCX_DATABASE_FILE as it has them)"
      })
    }
    return { layer: ApiKeys.layerFile(location, keysOptions), location }
  })

/**
 * The keys of `gcx serve`, where they are, and the data key; a database that
 * fails is one line, exit 5. `make`: a keys file that does not exist is made.
 */
const keysLayer = (
  make: boolean
): Layer.Layer<ApiKeys.ApiKeys | KeysLocation, Config.ConfigError | ExitCode.CliError> =>
  Layer.effectContext(Effect.gen(function*() {
    const cipher = yield* Layer.build(CardCipher.layerConfig())
    const { layer, location } = yield* keysOfDeployment(make)
    const keys: Layer.Layer<ApiKeys.ApiKeys, Failure, CardCipher.CardCipher> = layer
    const built = yield* Layer.build(keys).pipe(
      Effect.provideContext(cipher),
      Effect.mapError((error) =>
        error._tag === "UnsealError"
          ? new ExitCode.CliError({ code: ExitCode.ExitCode.Usage, message: `the webhook secrets: ${error.message}` })
          : error._tag === "DatabaseUnreachable"
          ? DatabaseFailure.databaseFailure(error)
          : unavailable(error.message)
      )
    )
    return Context.add(built, KeysLocation, location)
  }))

/**
 * Runs `effect` with the keys of `gcx serve` and where they are; a failure of
 * the database is one line, exit 5. `make`: a keys file that does not exist
 * is made (else the command fails naming it).
 */
export const withKeys = <A, E, R>(effect: Effect.Effect<A, E | SqlError.SqlError, R>, make = false) =>
  effect.pipe(
    Effect.catchIf(SqlError.isSqlError, (error) => Effect.fail(unavailable(error.message))),
    Effect.provide(keysLayer(make))
  )

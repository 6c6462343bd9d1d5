/**
 * A PostgreSQL database that a command could not use, as the CLI reports it: a
 * `GCX_DATABASE_URL` that is malformed, or not a PostgreSQL URL, is a setting
 * to fix (exit 2); one that names a server that cannot be reached is a failure
 * of the service (exit 5); one that holds another service's quotes is a setup
 * to change (exit 2). The line never holds the URL's password.
 */
import * as Database from "@gcx/workflow/Database"
import type * as ServiceBinding from "@gcx/workflow/ServiceBinding"
import { CliError, ExitCode } from "./ExitCode.js"
import * as Text from "./Text.js"

/** The `CliError` of `error`: exit 2 for a malformed URL, exit 5 for a database that cannot be reached. */
export const databaseFailure = (error: Database.DatabaseUnreachable): CliError =>
  new CliError({
    code: Database.isMalformedUrl(error) ? ExitCode.Usage : ExitCode.ServiceFailure,
    message: Text.safe(error.message)
  })

/** A database that holds another service's quotes (`ServiceBinding`): a setup to change, exit 2. */
export const serviceMismatch = (error: ServiceBinding.ServiceMismatch): CliError =>
  new CliError({ code: ExitCode.Usage, message: Text.safe(`database: ${error.message}`) })

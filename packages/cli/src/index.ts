/** @gcx/cli: the `gcx` command, its pieces, and the embedded sandbox. */

/** The `gcx` command and `main`, which runs it and returns the exit code. */
export * as Cli from "./Cli.js"

/** Where gcx connects: the connection flags, the `GCX_*` variables and the embedded default. */
export * as Connection from "./Connection.js"

/** The embedded sandbox and a client for it. */
export * as Embedded from "./Embedded.js"

/** The exit codes and the one-line report of a failure. */
export * as ExitCode from "./ExitCode.js"

/** The one-line descriptions of quote failures, configuration errors and usage errors. */
export * as Describe from "./Describe.js"

/** The progress bar, plain and JSON renderers. */
export * as Render from "./Render.js"

/** The display of `gcx batch`: a bar for the batch, or one line per card. */
export * as BatchDisplay from "./BatchDisplay.js"

/** The input files of `gcx batch`: CSV or JSON lines. */
export * as BatchFile from "./BatchFile.js"

/** The results file of `gcx batch`: one line per card, and what a re-run skips. */
export * as BatchResults from "./BatchResults.js"

/** The `--poll-interval` and `--deadline` flags. */
export * as Polling from "./Polling.js"

/** The keyed fingerprints of a batch's cards, and where their key comes from. */
export * as BatchKey from "./BatchKey.js"

/** What gcx prints of text it did not write: control characters escaped. */
export * as Text from "./Text.js"

/** The ANSI styles of gcx's own text on a terminal. */
export * as Ansi from "./Ansi.js"

/** Where and how gcx writes: colours, logs on stderr, `--log-level` anywhere, a closed stdout. */
export * as Output from "./Output.js"

/** The help of each command: the `GCX_*` variables, the exit codes, the usage hint. */
export * as Help from "./Help.js"

/** Flags whose errors name the flag. */
export * as Flag from "./Flag.js"

/** The host and the cause when the service could not be reached. */
export * as Reachability from "./Reachability.js"

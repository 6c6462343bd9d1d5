/**
 * `--durable` for `gcx quote` and `gcx batch`: each quote goes through the
 * durable workflow of `@gcx/workflow`, embedded on SQLite unless
 * `GCX_DATABASE_URL` is set (see `DurablePoller`). This module is light: the
 * workflow, the cluster and the database drivers are loaded only when
 * `--durable` is given.
 */
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Connection from "./Connection.js"
import type * as DurablePoller from "./DurablePoller.js"

/** The `--durable` flag. */
export const flag = Flag.Boolean("durable").pipe(
  Flag.withDescription(
    "run the quote as a durable workflow: embedded on SQLite (GCX_DATABASE_FILE, default .gcx/gcx.db; on the " +
      "embedded sandbox, <name>.sandbox.db beside it), or " +
      "client-only on the runners of GCX_DATABASE_URL; the card is sealed with GCX_DATA_KEY. Interrupted, " +
      "it prints the quote's requestId: gcx result <requestId> --wait fetches its outcome"
  ),
  Flag.withDefault(false)
)

/** The poller of `--durable` (`DurablePoller.pollerLayer`), loaded on demand. */
export const pollerLayer = (
  flags: Connection.Flags,
  options?: DurablePoller.LayerOptions
): ReturnType<typeof DurablePoller.pollerLayer> =>
  Layer.unwrap(
    Effect.map(
      Effect.promise((): Promise<typeof DurablePoller> => import("./DurablePoller.js")),
      (module) => module.pollerLayer(flags, options)
    )
  )

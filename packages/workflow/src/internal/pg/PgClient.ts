/**
 * `@effect/sql-pg`'s `PgClient` tag, by its key, without loading the package. `@effect/sql-pg` is
 * an optional peer, needed on PostgreSQL only: the modules an embedded deployment loads (the event
 * log, the outcomes, the relay) look for the client in their context with this tag, so that they
 * load without it. A test checks that the key is the package's.
 */
import type * as Pg from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"

/** The tag of `@effect/sql-pg/PgClient`'s `PgClient` (the same key). */
export const PgClient = Context.Service<Pg.PgClient>("@effect/sql-pg/PgClient")

/** The client's type. */
export type PgClient = Pg.PgClient

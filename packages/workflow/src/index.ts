/** Durable gcx quotes on @effect/workflow and @effect/cluster: SQLite embedded, PostgreSQL across runners. */
export {}

/**
 * The modules of an embedded deployment find `@effect/sql-pg`'s client in their context by its
 * tag's key, without loading the optional peer (`internal/pg/PgClient.ts`): the key must be the
 * package's, or on PostgreSQL they would not find the client (no LISTEN, no NOTIFY).
 */
import * as Pg from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as PgClient from "../src/internal/pg/PgClient.js"

describe("the PgClient tag of the embedded modules", () => {
  it("has the key of @effect/sql-pg's PgClient", () => {
    expect(PgClient.PgClient.key).toBe(Pg.PgClient.key)
    expect(PgClient.PgClient.key).toBe("@effect/sql-pg/PgClient")
  })
})

import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as TestPg from "./utils/postgres.js"

layer(Layer.provideMerge(TestPg.layerClient, TestPg.layer({ ownServer: true })), { excludeTestServices: true })(
  "throwaway PostgreSQL",
  (it) => {
    it.effect(
      "serves a fresh database on loopback, and comes back after a stop and start",
      () =>
        Effect.gen(function*() {
          const db = yield* TestPg.PgTestDatabase
          const sql = yield* SqlClient.SqlClient
          expect(new URL(db.urlString).hostname).toBe("127.0.0.1")
          const [row] = yield* sql<
            { db: string; version: string }
          >`SELECT current_database() AS db, version() AS version`
          expect(row!.db).toBe("gcx")
          expect(row!.version).toMatch(/^PostgreSQL 1\d/)
          yield* db.stop
          expect(yield* Effect.result(sql`SELECT 1`)).toMatchObject({ _tag: "Failure" })
          yield* db.start
          const [again] = yield* sql<{ one: number }>`SELECT 1 AS one`.pipe(
            Effect.retry({ times: 20 })
          )
          expect(again!.one).toBe(1)
        }),
      60_000
    )
  }
)

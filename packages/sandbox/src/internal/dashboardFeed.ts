/**
 * What one dashboard stream sends: a full snapshot first, then, tick by tick,
 * what changed since its previous message. A tick reads the latest
 * transactions (only when the store's version moved), recomputes the shown
 * ones still running (their progress moves with the clock), reads the
 * journal from the stream's cursor and compares the small parts (counts,
 * faults, partners) with what it sent: its cost grows with what is shown and
 * what changed, never with the number of stored transactions.
 */
import { Wire } from "@gcx/core"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type DashboardDelta, type DashboardSnapshot, DashboardTransaction } from "../Api.js"
import * as Faults from "../Faults.js"
import * as Journal from "../Journal.js"
import * as Lifecycle from "../Lifecycle.js"
import { Store, type Transaction } from "../Store.js"
import { SandboxConfig } from "./config.js"

/** How many transactions and journal entries the dashboard shows (the latest). */
export const shownCount = 100

/** After how many ticks with nothing to send a keep-alive (a delta with the time only) is sent. */
export const keepAliveTicks = 10

/** One message of the stream: the event's name and its data, encoded. */
export type Message =
  | { readonly event: "snapshot"; readonly data: typeof DashboardSnapshot.Encoded }
  | { readonly event: "delta"; readonly data: typeof DashboardDelta.Encoded }

/** A transaction as the stream last sent it. */
interface Shown {
  readonly transaction: Transaction
  readonly encoded: typeof DashboardTransaction.Encoded
  readonly json: string
  /** Done when it was sent: it never changes again. */
  readonly done: boolean
}

const encodeTransaction = Schema.encodeSync(DashboardTransaction)
const encodeJournal = Schema.encodeSync(Schema.Array(Journal.Entry))
const encodeFaults = Schema.encodeSync(Schema.Array(Faults.FaultRule))
const encodeTime = Schema.encodeSync(Wire.Timestamp)

const show = (transaction: Transaction, now: number): Shown => {
  const encoded = encodeTransaction({
    ...Lifecycle.summaryAt(transaction, now),
    steps: Lifecycle.stepsAt(transaction, now)
  })
  const done = Lifecycle.progressAt(transaction, now).isCompleted
  return { transaction, encoded, json: JSON.stringify(encoded), done }
}

const sameIds = (left: ReadonlyArray<string>, right: ReadonlyArray<string>): boolean =>
  left.length === right.length && left.every((id, index) => id === right[index])

/**
 * Makes the state of one stream; `next` gives its next message, if any. The
 * first message, and the first after a reset of the sandbox, is a snapshot.
 */
export const make = Effect.gen(function*() {
  const config = yield* SandboxConfig
  const store = yield* Store
  const recorder = yield* Journal.Recorder
  const injector = yield* Faults.FaultInjector
  let shown: ReadonlyArray<Shown> = []
  let version = -1
  let cursor: Journal.Cursor | undefined
  let idleTicks = 0
  const sent = new Map<string, string>()

  /** The part when it differs from what was sent last (it is then what was sent), else undefined. */
  const fresh = <A>(name: string, part: A): A | undefined => {
    const json = JSON.stringify(part)
    if (sent.get(name) === json) return undefined
    sent.set(name, json)
    return part
  }

  /** The shown transactions that are new or changed, newest first, and their ids when they are other ones. */
  const transactionChanges = (now: number) =>
    Effect.gen(function*() {
      const current = yield* store.version
      const latest = current === version ? undefined : yield* store.latest(shownCount)
      version = current
      const before = new Map(shown.map((item) => [item.transaction.id, item]))
      const changed: Array<typeof DashboardTransaction.Encoded> = []
      shown = (latest ?? shown.map((item) => item.transaction)).map((transaction) => {
        const last = before.get(transaction.id)
        if (last !== undefined && last.done) return last
        const next = show(transaction, now)
        if (last?.json !== next.json) changed.push(next.encoded)
        return next
      })
      const ids = shown.map((item) => item.transaction.id)
      return { changed, ids: sameIds(ids, Array.from(before.keys())) ? undefined : ids }
    })

  const partners = Effect.forEach(
    config.partners,
    (partner) => Effect.map(store.isEnabled(partner.clientId), (enabled) => ({ clientId: partner.clientId, enabled }))
  )

  const next: Effect.Effect<Option.Option<Message>> = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const journal = yield* recorder.since(cursor, shownCount)
    cursor = journal.cursor
    if (journal.restarted) {
      // A new stream, or the sandbox was reset: start again from nothing.
      shown = []
      version = -1
      sent.clear()
    }
    const transactions = yield* transactionChanges(now)
    const time = encodeTime(DateTime.makeUnsafe(now))
    const requests = fresh("requests", yield* recorder.snapshotCounts)
    const faults = fresh("faults", encodeFaults(yield* injector.rules))
    const partnersNow = fresh("partners", yield* partners)
    const entries = encodeJournal(journal.entries)
    if (journal.restarted) {
      // Nothing was sent before, so every part is fresh.
      return Option.some<Message>({
        event: "snapshot",
        data: {
          time,
          requests: requests!,
          transactions: transactions.changed,
          journal: entries,
          faults: faults!,
          partners: partnersNow!
        }
      })
    }
    const data: typeof DashboardDelta.Encoded = {
      time,
      ...(requests === undefined ? {} : { requests }),
      ...(transactions.changed.length === 0 ? {} : { transactions: transactions.changed }),
      ...(transactions.ids === undefined ? {} : { transactionIds: transactions.ids }),
      ...(entries.length === 0 ? {} : { journal: entries }),
      ...(faults === undefined ? {} : { faults }),
      ...(partnersNow === undefined ? {} : { partners: partnersNow })
    }
    const idle = Object.keys(data).length === 1
    idleTicks = idle ? idleTicks + 1 : 0
    if (idle && idleTicks < keepAliveTicks) return Option.none()
    idleTicks = 0
    return Option.some<Message>({ event: "delta", data })
  })

  return { next }
})

/**
 * The JSON body of a transaction GET, encoded with `TransactionStatus`'s own
 * schema. Once a transaction is done, its status never changes but for the
 * time of the answer (`response.responseTimestamp`), so its encoded body is
 * kept (for as long as the transaction itself) and only that time is written
 * into it on each read.
 */
import { Transaction as Status } from "@gcx/core"
import * as Schema from "effect/Schema"
import * as Lifecycle from "../Lifecycle.js"
import type { Transaction } from "../Store.js"

const encodeStatus = Schema.encodeSync(Status.TransactionStatus)

/** Stands for the answer's time in a kept body; JSON-escaped, it cannot occur in an encoded value. */
const marker = JSON.stringify("\u0000responseTimestamp\u0000")

/** The encoded bodies of done transactions, split around the answer's time. */
const doneBodies = new WeakMap<Transaction, readonly [string, string]>()

// The last time written and its JSON: answers within the same millisecond share it.
let lastStampMillis = Number.NaN
let lastStamp = ""

const stamp = (now: number): string => {
  if (now !== lastStampMillis) {
    // What `Wire.Timestamp` (`Schema.DateTimeUtc`) encodes: `DateTime.formatIso`, the ISO string of the instant.
    lastStamp = JSON.stringify(new Date(now).toISOString())
    lastStampMillis = now
  }
  return lastStamp
}

/** The kept body of a done transaction at `now`, if it was answered before. */
export const doneBodyAt = (transaction: Transaction, now: number): string | undefined => {
  const parts = doneBodies.get(transaction)
  return parts === undefined ? undefined : parts[0] + stamp(now) + parts[1]
}

/** The body of `status`, the transaction's status at `now`; kept when the transaction is done. */
export const bodyOf = (transaction: Transaction, status: Status.TransactionStatus, now: number): string => {
  const encoded = encodeStatus(status)
  if (!Lifecycle.progressAt(transaction, now).isCompleted) return JSON.stringify(encoded)
  const json = JSON.stringify({ ...encoded, response: { ...encoded.response, responseTimestamp: JSON.parse(marker) } })
  const at = json.indexOf(marker)
  doneBodies.set(transaction, [json.slice(0, at), json.slice(at + marker.length)])
  return doneBodyAt(transaction, now)!
}

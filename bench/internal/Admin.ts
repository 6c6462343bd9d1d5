/**
 * The sandbox's admin API over HTTP (`/__sandbox/`, header `x-admin-key`):
 * journal, transactions, faults, settings and reset. Plain `fetch`, so that it
 * serves both the Effect code and the plain async code of the bench.
 */
import type { Faults } from "@gcx/sandbox"
import { Api, Journal, Lifecycle } from "@gcx/sandbox"
import * as Schema from "effect/Schema"
import type { Endpoint } from "./SandboxProcess.js"

const call = async (endpoint: Endpoint, method: string, path: string, body?: unknown): Promise<unknown> => {
  const response = await fetch(`${endpoint.baseUrl}${Api.adminPrefix}${path}`, {
    method,
    headers: {
      [Api.adminKeyHeader]: endpoint.adminKey,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`admin ${method} ${path} answered ${response.status}: ${text.slice(0, 200)}`)
  return text === "" ? undefined : JSON.parse(text)
}

const decodeJournal = Schema.decodeUnknownPromise(Journal.Journal)
const decodeTransactions = Schema.decodeUnknownPromise(Schema.Array(Lifecycle.Summary))

/** A snapshot of the request journal. */
export const journal = async (endpoint: Endpoint): Promise<Journal.Journal> =>
  decodeJournal(await call(endpoint, "GET", "/journal"))

/** Every transaction, oldest first. */
export const transactions = async (endpoint: Endpoint): Promise<ReadonlyArray<Lifecycle.Summary>> =>
  decodeTransactions(await call(endpoint, "GET", "/transactions"))

/** Clears transactions, requestIds, the journal and the faults, and restores the token lifetime. */
export const reset = async (endpoint: Endpoint): Promise<void> => {
  await call(endpoint, "POST", "/reset")
}

/** Replaces the fault rules. */
export const setFaults = async (endpoint: Endpoint, rules: ReadonlyArray<Faults.FaultRule>): Promise<void> => {
  await call(endpoint, "PUT", "/faults", rules)
}

/** Changes the lifetime of the tokens issued from now on. */
export const setTokenLifetime = async (endpoint: Endpoint, tokenLifetimeSeconds: number): Promise<void> => {
  await call(endpoint, "PUT", "/settings", { tokenLifetimeSeconds })
}

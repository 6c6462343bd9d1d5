/**
 * A webhook receiver on loopback as a partner would run one: it verifies each
 * delivery's `Gcx-Signature` with the endpoint's secret
 * (`WebhookSignature.verify`), acts on each `Gcx-Event-Id` once and answers
 * 2xx to its repeats (delivery is at least once), and refuses the first
 * delivery of some events with a 503 so that the gateway's retries are
 * exercised. It records every delivery for the assertions.
 */
import * as WebhookSignature from "@gcx/gateway/WebhookSignature"
import * as Result from "effect/Result"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** An event as acted on: its body's type and quote, and how many deliveries of it arrived. */
export interface Acted {
  readonly type: string
  readonly quoteId: string
  readonly status: string
  deliveries: number
}

/** A running receiver. */
export interface Receiver {
  readonly url: string
  /** Sets the endpoint's secret (known once the key is created, after the receiver's URL). */
  readonly setSecret: (secret: string) => void
  /** Each event acted on, by event id: exactly one entry per id. */
  readonly acted: Map<string, Acted>
  /** Every request received, verified or not: the raw bodies, for the secrets scan. */
  readonly bodies: Array<string>
  readonly counts: {
    deliveries: number
    verified: number
    refusedOnPurpose: number
    badSignature: number
    duplicates: number
    mismatchedEventId: number
  }
  readonly close: () => Promise<void>
}

/** Starts a receiver on 127.0.0.1 that refuses the first delivery of each event for which `refuseFirst` says so. */
export const start = (refuseFirst: (eventId: string) => boolean): Promise<Receiver> => {
  let secret = ""
  const acted = new Map<string, Acted>()
  const refused = new Set<string>()
  const bodies: Array<string> = []
  const counts = {
    deliveries: 0,
    verified: 0,
    refusedOnPurpose: 0,
    badSignature: 0,
    duplicates: 0,
    mismatchedEventId: 0
  }
  const server = Http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks)
      counts.deliveries++
      bodies.push(body.toString("utf8"))
      const verified = WebhookSignature.verify({
        header: request.headers[WebhookSignature.headerName.toLowerCase()] as string | undefined,
        body,
        secret
      })
      if (Result.isFailure(verified)) {
        counts.badSignature++
        return void response.writeHead(400).end()
      }
      counts.verified++
      const eventId = String(request.headers[WebhookSignature.eventIdHeaderName.toLowerCase()])
      const event = JSON.parse(body.toString("utf8")) as {
        readonly id: string
        readonly type: string
        readonly data: { readonly id: string; readonly status: string }
      }
      if (event.id !== eventId) counts.mismatchedEventId++
      if (refuseFirst(eventId) && !refused.has(eventId)) {
        refused.add(eventId)
        counts.refusedOnPurpose++
        return void response.writeHead(503).end()
      }
      const known = acted.get(eventId)
      if (known !== undefined) {
        known.deliveries++
        counts.duplicates++
      } else {
        acted.set(eventId, { type: event.type, quoteId: event.data.id, status: event.data.status, deliveries: 1 })
      }
      response.writeHead(204).end()
    })
  })
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}/gcx/webhooks`,
        setSecret: (value) => (secret = value),
        acted,
        bodies,
        counts,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  )
}

/**
 * The secrets scan's capture: the shared kit of @gcx/sandbox (`Capture`: every
 * log line at every level, every span), plus what the chaos run adds: every
 * event and error in several renderings, and every bearer token the client
 * sent, to scan for.
 */
import { Capture as Kit } from "@gcx/sandbox"
import { Effect, Formatter, Layer } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import * as util from "node:util"

/** What a run let out, and the access tokens it used. */
export interface Capture extends Kit.Capture {
  /** Every `Authorization: Bearer` value the client sent. */
  readonly tokens: Set<string>
}

/** An empty capture. */
export const make = (): Capture => ({ ...Kit.make(), tokens: new Set() })

const safely = (render: () => string): string => {
  try {
    return render()
  } catch (error) {
    return `(rendering failed: ${String(error)})`
  }
}

const json = (value: unknown): string =>
  JSON.stringify(value, (_, inner) => (typeof inner === "bigint" ? String(inner) : inner)) ?? ""

/** Every way a value may end up in a log or an exporter. */
export const renderings = (value: unknown): Array<string> => {
  const out = [
    safely(() => String(value)),
    safely(() => json(value)),
    safely(() => Formatter.format(value)),
    safely(() => util.inspect(value, { depth: 12 }))
  ]
  if (value instanceof Error) out.push(value.message, value.stack ?? "")
  return out
}

/** Records the renderings of a value (an event, an error). */
export const record = (capture: Capture, value: unknown): void => {
  for (const text of renderings(value)) capture.lines.push(text)
}

/** Every log line and every span of the run. */
export const layer = (capture: Capture): Layer.Layer<never> => Kit.layer(capture)

/** `FetchHttpClient` that records the bearer token of every request it sends. */
export const httpClient = (capture: Capture): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      HttpClient.tapRequest(client, (request) =>
        Effect.sync(() => {
          const authorization = request.headers.authorization
          if (authorization?.startsWith("Bearer ")) capture.tokens.add(authorization.slice("Bearer ".length))
        })))
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** The whole capture as one text. */
export const text = (capture: Capture): string => Kit.text(capture)

/** The sentinels found in the text: empty when nothing leaked. */
export const scan = Kit.scan

/** JWT-shaped strings (`eyJ...` header and claims): an access token, whoever issued it. */
export const jwtShape = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}/

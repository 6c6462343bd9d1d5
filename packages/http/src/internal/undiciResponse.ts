/**
 * The `HttpClientResponse` of one undici dispatch, over its body's state
 * (`undiciBody.ts`). A whole read (`text`, `json`, `arrayBuffer`, ...) of a
 * body that has already arrived, which is the common case for a small answer,
 * runs synchronously: no fiber, no promise. A body can be read whole any number
 * of times, or once as a stream.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Cookies from "effect/http/Cookies"
import * as Headers from "effect/http/Headers"
import * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as UrlParams from "effect/http/UrlParams"
import * as Inspectable from "effect/Inspectable"
import * as Option from "effect/Option"
import { pipeArguments } from "effect/Pipeable"
import type * as Schema from "effect/Schema"
import type * as Socket from "effect/socket/Socket"
import * as Stream from "effect/Stream"
import * as Body from "./undiciBody.js"

/** Response headers as undici gives them: lower-case names, a list for a repeated header. */
export type RawHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const decoder = new TextDecoder()
const formDecoder = new TextDecoder("utf-8", { ignoreBOM: true })

const alreadyStreamed = "the body was already read as a stream"
const alreadyWhole = "the body was already read whole"

const decodeError = (response: HttpClientResponse.HttpClientResponse, cause: unknown, description?: string) =>
  new HttpClientError.HttpClientError({
    reason: new HttpClientError.DecodeError({
      request: response.request,
      response,
      cause,
      ...(description === undefined ? {} : { description })
    })
  })

class UndiciResponse extends Inspectable.Class implements HttpClientResponse.HttpClientResponse {
  readonly [HttpClientResponse.TypeId] = HttpClientResponse.TypeId
  readonly [HttpIncomingMessage.TypeId] = HttpIncomingMessage.TypeId
  readonly request: HttpClientRequest.HttpClientRequest
  readonly url: string
  readonly status: number
  readonly raw: RawHeaders
  readonly body: Body.State
  private parsedHeaders: Headers.Headers | undefined

  constructor(
    request: HttpClientRequest.HttpClientRequest,
    url: string,
    status: number,
    raw: RawHeaders,
    body: Body.State
  ) {
    super()
    this.request = request
    this.url = url
    this.status = status
    this.raw = raw
    this.body = body
  }

  get headers(): Headers.Headers {
    return this.parsedHeaders ??= Headers.fromInput(this.raw as Headers.Input)
  }

  get cookies(): Cookies.Cookies {
    const header = this.raw["set-cookie"]
    return header === undefined ? Cookies.empty : Cookies.fromSetCookie(header)
  }

  get remoteAddress(): Option.Option<string> {
    return Option.none()
  }

  /** The whole body: at once when it has arrived, else when it has. Not to be written to (it is kept). */
  private get whole(): Effect.Effect<Uint8Array, HttpClientError.HttpClientError> {
    return Effect.suspend(() => {
      const state = this.body
      if (state.reading === "stream") return Effect.fail(decodeError(this, undefined, alreadyStreamed))
      state.reading = "whole"
      if (state.failure !== undefined) return Effect.fail(decodeError(this, state.failure))
      if (state.done) return Effect.succeed(Body.joined(state))
      return Effect.callback<Uint8Array, HttpClientError.HttpClientError>((resume) => {
        // While a whole read waits, the body flows to its end (never paused).
        state.flowing++
        let waiting = true
        const leave = () => {
          if (!waiting) return
          waiting = false
          state.flowing--
        }
        let stop = () => {}
        const check = () => {
          if (state.failure !== undefined) {
            leave()
            resume(Effect.fail(decodeError(this, state.failure)))
          } else if (state.done) {
            leave()
            resume(Effect.succeed(Body.joined(state)))
          } else {
            stop = Body.waitFor(state, check)
          }
        }
        stop = Body.waitFor(state, check)
        Body.resume(state)
        return Effect.sync(() => {
          stop()
          leave()
        })
      })
    })
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpClientError.HttpClientError> {
    return Effect.map(
      this.whole,
      (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
    )
  }

  get text(): Effect.Effect<string, HttpClientError.HttpClientError> {
    return Effect.map(this.whole, (bytes) => decoder.decode(bytes))
  }

  get json(): Effect.Effect<Schema.Json, HttpClientError.HttpClientError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({
        try: () => text === "" ? null : JSON.parse(text) as Schema.Json,
        catch: (cause) => decodeError(this, cause)
      }))
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpClientError.HttpClientError> {
    return Effect.flatMap(this.whole, (bytes) =>
      Effect.try({
        // A leading "?" is form data; URLSearchParams would drop it as a query prefix.
        try: () => UrlParams.fromInput(new URLSearchParams(formDecoder.decode(bytes).replace(/^\?/, "%3F"))),
        catch: (cause) => decodeError(this, cause)
      }))
  }

  get formData(): Effect.Effect<FormData, HttpClientError.HttpClientError> {
    return Effect.flatMap(this.whole, (bytes) =>
      Effect.tryPromise({
        try: () => new globalThis.Response(bytes as Uint8Array<ArrayBuffer>, { headers: this.headers }).formData(),
        catch: (cause) => decodeError(this, cause)
      }))
  }

  /** The chunks as they arrive, once. Ending the stream early cancels the rest of the body. */
  get stream(): Stream.Stream<Uint8Array, HttpClientError.HttpClientError> {
    const state = this.body
    const pull: Effect.Effect<[Uint8Array, ...Array<Uint8Array>], HttpClientError.HttpClientError | Cause.Done> = Effect
      .suspend(() => {
        if (state.chunks.length > 0) return Effect.succeed(Body.take(state) as [Uint8Array, ...Array<Uint8Array>])
        if (state.failure !== undefined) return Effect.fail(decodeError(this, state.failure))
        if (state.done) return Cause.done()
        return Effect.callback((resume) => {
          const stop = Body.waitFor(state, () => resume(pull))
          Body.resume(state)
          return Effect.sync(stop)
        })
      })
    return Stream.suspend(() => {
      let started = false
      return Stream.fromPull(Effect.suspend(() => {
        if (state.reading !== undefined) {
          return Effect.fail(decodeError(this, undefined, state.reading === "stream" ? alreadyStreamed : alreadyWhole))
        }
        state.reading = "stream"
        started = true
        return Effect.succeed(pull)
      })).pipe(
        Stream.ensuring(Effect.sync(() => {
          if (started && !state.done && state.failure === undefined) {
            state.flow?.abort(new Error("the body's stream was closed"))
          }
        }))
      )
    })
  }

  /** An upgrade goes through Effect's own undici client: an answer here is never a `101`. */
  get upgrade(): Effect.Effect<Socket.Socket, HttpClientError.HttpClientError> {
    return Effect.fail(
      new HttpClientError.HttpClientError({
        reason: new HttpClientError.StatusCodeError({ request: this.request, response: this })
      })
    )
  }

  toJSON(): unknown {
    return HttpIncomingMessage.inspect(this, {
      _id: "effect/http/HttpClientResponse",
      request: this.request.toJSON(),
      status: this.status
    })
  }

  pipe() {
    return pipeArguments(this, arguments)
  }
}

/** The response of one dispatch, its body still arriving into `body`. */
export const make = (
  request: HttpClientRequest.HttpClientRequest,
  url: string,
  status: number,
  headers: RawHeaders,
  body: Body.State
): HttpClientResponse.HttpClientResponse => new UndiciResponse(request, url, status, headers, body)

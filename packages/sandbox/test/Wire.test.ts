/**
 * Pins the hot routes' answers byte for byte (status line, headers in their
 * order, body), read from a raw socket, so that work on the server's request
 * path cannot change what a client receives. Only what differs between runs
 * is replaced by a placeholder: the Date header, the trace id, ids, tokens
 * and timestamps.
 */
import { expect, layer } from "@effect/vitest"
import { Routes } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as Net from "node:net"
import {
  credentialsForm,
  exchangeHeaders,
  getTransaction,
  pollUntil,
  postQuote,
  quoteBody,
  tokenFor
} from "./helpers.js"

/** Sends one request on its own connection (`Connection: close`) and reads the raw answer until the server closes. */
const raw = (
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body = ""
): Effect.Effect<string, Error> =>
  Effect.callback<string, Error>((resume) => {
    const url = new URL(baseUrl)
    const socket = Net.connect(Number(url.port), url.hostname)
    const chunks: Array<Buffer> = []
    const lines = [
      `${method} ${path} HTTP/1.1`,
      `host: ${url.host}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ...(body === "" ? [] : [`content-length: ${Buffer.byteLength(body)}`]),
      "connection: close"
    ]
    socket.on("connect", () => socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`))
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("error", (error) => resume(Effect.fail(error)))
    socket.on("close", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
    return Effect.sync(() => socket.destroy())
  })

/**
 * The answer with what differs between runs replaced by placeholders. A
 * pending transaction's progress figures (and so its length) depend on when
 * it is read: they are replaced too, once the length is checked.
 */
const normalize = (answer: string, values: Record<string, string>): string => {
  const [head = "", body = ""] = answer.split("\r\n\r\n")
  expect(head).toContain(`content-length: ${Buffer.byteLength(body)}\r\n`)
  const pending = body.includes("\"isCompleted\":false")
  let text = answer
    .replace(/^date: .*$/im, "date: <date>")
    .replace(/^(svc-trace-id): .*$/im, "$1: <trace-id>")
    .replace(/"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"/g, "\"<time>\"")
  if (pending) {
    text = text
      .replace(/^content-length: .*$/im, "content-length: <length>")
      .replace(/"(percentComplete|expectedCompletionTime)":[\d.]+/g, "\"$1\":<figure>")
  }
  for (const [name, value] of Object.entries(values)) text = text.replaceAll(value, `<${name}>`)
  return text
}

layer(Sandbox.layer({ timeScale: 0.01 }), { excludeTestServices: true })("wire", (it) => {
  it.effect("the hot routes answer the same bytes", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const token = yield* tokenFor(server)
      const requestId = "wire0123456789"
      const headers = exchangeHeaders(token, { requestId })
      const created = yield* postQuote(server, headers, quoteBody(TestData.Cards.success))
      // A transaction that stays pending for the whole test, in a sandbox of its own at real speed.
      const slow = yield* Sandbox.make({ timeScale: 1 })
      const slowToken = yield* tokenFor(slow)
      const pending = yield* postQuote(
        slow,
        exchangeHeaders(slowToken, { requestId: "wire-pending" }),
        quoteBody(TestData.Cards.slow)
      )
      const transactionId: string = created.body.transactionId
      const instant = yield* postQuote(
        server,
        exchangeHeaders(token, { requestId: "wire-instant" }),
        quoteBody(TestData.Cards.instant)
      )
      yield* pollUntil(getTransaction(server, headers, transactionId), (reply) => reply.body.response.isCompleted)
      const values = {
        token,
        transactionId,
        instantId: instant.body.transactionId,
        host: new URL(server.baseUrl).host,
        slowToken,
        pendingId: pending.body.transactionId,
        slowHost: new URL(slow.baseUrl).host
      }
      const stage = server.stage
      const { apiKey } = TestData.partner
      const exchange = { authorization: `Bearer ${token}`, "x-api-key": apiKey, requestid: requestId }
      const requests: ReadonlyArray<readonly [string, string, Record<string, string>, string?, string?]> = [
        [
          "POST",
          Routes.tokenPath,
          { "content-type": "application/x-www-form-urlencoded" },
          new URLSearchParams(credentialsForm()).toString()
        ],
        ["GET", Routes.heartbeatPath, exchange],
        ["GET", Routes.transactionPath(transactionId, stage), exchange],
        ["GET", Routes.transactionPath(transactionId, stage), exchange],
        ["GET", Routes.transactionPath(transactionId), exchange],
        ["GET", Routes.transactionPath(values.instantId, stage), exchange],
        [
          "GET",
          Routes.transactionPath(pending.body.transactionId, stage),
          { ...exchange, authorization: `Bearer ${slowToken}` },
          "",
          slow.baseUrl
        ],
        ["GET", Routes.transactionPath("nope", stage), exchange],
        ["GET", Routes.transactionPath(transactionId, stage), { "x-api-key": apiKey, requestid: requestId }],
        ["GET", Routes.transactionPath(transactionId, stage), { ...exchange, authorization: "Bearer forged" }],
        ["GET", Routes.transactionPath(transactionId, stage), { ...exchange, "x-api-key": "wrong" }],
        ["GET", Routes.transactionPath(transactionId, stage), {
          authorization: exchange.authorization,
          "x-api-key": apiKey
        }],
        ["GET", `${Routes.transactionPath(transactionId, stage)}/`, exchange],
        ["GET", "/nowhere", exchange],
        [
          "POST",
          Routes.quotePath(stage),
          { ...exchange, requestid: "wire-post", "content-type": "application/json" },
          quoteBody(TestData.Cards.instant)
        ]
      ]
      const answers = yield* Effect.forEach(
        requests,
        ([method, path, headers, body, baseUrl]) => raw(baseUrl ?? server.baseUrl, method, path, headers, body)
      )
      const posted = /"transactionId":"([^"]+)"/.exec(answers[answers.length - 1]!)?.[1] ?? "none"
      const access = /"access_token":"([^"]+)"/.exec(answers[0]!)?.[1] ?? "none"
      const text = answers.map((answer, index) =>
        normalize(
          `### ${requests[index]![0]} ${requests[index]![1]}\n${answer}`,
          { ...values, postedId: posted, issuedToken: access }
        )
      ).join("\n\n")
      yield* Effect.promise(() => expect(text).toMatchFileSnapshot("./__snapshots__/wire.txt"))
    }).pipe(Effect.scoped))
})

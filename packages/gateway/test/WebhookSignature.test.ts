import { describe, expect, it } from "@effect/vitest"
import { Redacted, Result } from "effect"
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Path from "node:path"
import { WebhookSignature } from "../src/index.js"

const secret = "whsec_" + "a".repeat(43)
const body = `{"id":"evt_0123abcd","type":"quote.completed","created":1700000000,"data":{"id":"0123abcd"}}`
const t = 1_700_000_000

const reasonOf = (result: Result.Result<number, WebhookSignature.WebhookSignatureError>) =>
  Result.isFailure(result) ? result.failure.reason : "verified"

describe("WebhookSignature", () => {
  it("sign: t=<unix s>,v1=<hex HMAC-SHA-256(secret, \"t.body\")>", () => {
    const expected = Crypto.createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")
    expect(WebhookSignature.sign(secret, body, t)).toBe(`t=${t},v1=${expected}`)
    // the same for a Redacted secret and a body given as bytes
    expect(WebhookSignature.sign(Redacted.make(secret), new TextEncoder().encode(body), t)).toBe(
      `t=${t},v1=${expected}`
    )
  })

  it("sign with several secrets (a rotation's overlap): one v1 each, in order; each secret verifies alone", () => {
    const old = "whsec_" + "b".repeat(43)
    const header = WebhookSignature.sign([secret, Redacted.make(old)], body, t)
    const hex = (key: string) => Crypto.createHmac("sha256", key).update(`${t}.${body}`).digest("hex")
    expect(header).toBe(`t=${t},v1=${hex(secret)},v1=${hex(old)}`)
    for (const key of [secret, old]) {
      expect(reasonOf(WebhookSignature.verify({ header, body, secret: key, now: t }))).toBe("verified")
    }
    expect(reasonOf(WebhookSignature.verify({ header, body, secret: "whsec_other", now: t }))).toBe(
      "NoMatchingSignature"
    )
    expect(WebhookSignature.sign([secret], body, t)).toBe(WebhookSignature.sign(secret, body, t))
  })

  it("verify: a signed body within the tolerance, either way, gives its timestamp", () => {
    const header = WebhookSignature.sign(secret, body, t)
    expect(WebhookSignature.verify({ header, body, secret, now: t })).toEqual(Result.succeed(t))
    expect(reasonOf(WebhookSignature.verify({ header, body, secret, now: t + 300 }))).toBe("verified")
    expect(reasonOf(WebhookSignature.verify({ header, body, secret, now: t - 300 }))).toBe("verified")
    expect(reasonOf(WebhookSignature.verify({ header, body: Buffer.from(body), secret, now: t }))).toBe("verified")
  })

  it("verify: several v1 entries (a secret being rotated), spaces and other schemes are accepted", () => {
    const other = WebhookSignature.sign("whsec_old", body, t).split(",")[1]!
    const mine = WebhookSignature.sign(secret, body, t).split(",")[1]!
    const header = `t=${t}, ${other}, v0=deadbeef, ${mine}`
    expect(reasonOf(WebhookSignature.verify({ header, body, secret, now: t }))).toBe("verified")
    expect(reasonOf(WebhookSignature.verify({ header, body, secret: "whsec_old", now: t }))).toBe("verified")
    expect(reasonOf(WebhookSignature.verify({ header, body, secret: "whsec_other", now: t }))).toBe(
      "NoMatchingSignature"
    )
  })

  it("verify refuses a bad signature, a tampered body, a stale or future timestamp, a changed t", () => {
    const header = WebhookSignature.sign(secret, body, t)
    const bad = header.replace(/v1=[0-9a-f]/, (prefix) => prefix.endsWith("0") ? "v1=1" : "v1=0")
    expect(reasonOf(WebhookSignature.verify({ header: bad, body, secret, now: t }))).toBe("NoMatchingSignature")
    expect(reasonOf(WebhookSignature.verify({ header, body: body.replace("0123", "0124"), secret, now: t }))).toBe(
      "NoMatchingSignature"
    )
    expect(reasonOf(WebhookSignature.verify({ header, body, secret: secret + "x", now: t }))).toBe(
      "NoMatchingSignature"
    )
    expect(reasonOf(WebhookSignature.verify({ header, body, secret, now: t + 301 }))).toBe("TimestampOutsideTolerance")
    expect(reasonOf(WebhookSignature.verify({ header, body, secret, now: t - 301 }))).toBe("TimestampOutsideTolerance")
    expect(reasonOf(WebhookSignature.verify({ header, body, secret, now: t + 20, tolerance: 10 }))).toBe(
      "TimestampOutsideTolerance"
    )
    // a replay with a fresh t: the signature covers t
    const replayed = header.replace(`t=${t}`, `t=${t + 1000}`)
    expect(reasonOf(WebhookSignature.verify({ header: replayed, body, secret, now: t + 1000 }))).toBe(
      "NoMatchingSignature"
    )
    // the default clock is the system's: a delivery signed long ago is stale
    expect(reasonOf(WebhookSignature.verify({ header, body, secret }))).toBe("TimestampOutsideTolerance")
  })

  it("verify refuses a missing or malformed header, naming neither the secret nor the header", () => {
    const v1 = WebhookSignature.sign(secret, body, t).split(",")[1]!
    const malformed = [
      undefined,
      null,
      "",
      v1,
      `t=${t}`,
      `t=${t},v1=abc`,
      `t=abc,${v1}`,
      `t=${t},t=${t},${v1}`,
      `t=-1,${v1}`,
      `garbage,${v1}`,
      `t=${t},${v1}` + ",v0=x".repeat(2000)
    ]
    for (const header of malformed) {
      const result = WebhookSignature.verify({ header, body, secret, now: t })
      expect(reasonOf(result), String(header)).toBe("MalformedHeader")
      if (Result.isFailure(result)) {
        expect(result.failure.message).toContain("Gcx-Signature")
        expect(result.failure.message).not.toContain(secret)
        expect(result.failure.message).not.toContain(v1.slice(3))
      }
    }
  })

  it("the ten lines of Python in the docs verify what sign signs, and refuse a tampered body", () => {
    const script = Path.join(__dirname, "fixtures", "verify_webhook.py")
    const now = Math.floor(Date.now() / 1000)
    const header = WebhookSignature.sign(secret, body, now)
    const python = (input: string, signature: string, key: string) =>
      ChildProcess.execFileSync("python3", [script, signature, key], { input, encoding: "utf8", timeout: 10_000 })
        .trim()
    expect(python(body, header, secret)).toBe("valid")
    expect(python(body + " ", header, secret)).toBe("invalid")
    expect(python(body, header, "whsec_other")).toBe("invalid")
    expect(python(body, WebhookSignature.sign(secret, body, now - 301), secret)).toBe("invalid")
    expect(python(body, `t=${now},v0=x, ${WebhookSignature.sign(secret, body, now).split(",")[1]}`, secret)).toBe(
      "valid"
    )
    // during a rotation's overlap, either secret verifies the header that both signed
    const rotated = WebhookSignature.sign([secret, "whsec_old"], body, now)
    expect([python(body, rotated, secret), python(body, rotated, "whsec_old")]).toEqual(["valid", "valid"])
  })
})

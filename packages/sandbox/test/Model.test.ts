import { describe, expect, it } from "@effect/vitest"
import { ErrorBody } from "@gcx/core"
import type { Store } from "@gcx/sandbox"
import { Jwt, Lifecycle, Scenarios, TestData, Tokens } from "@gcx/sandbox"
import { BigDecimal, Effect, Result } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import * as Args from "../src/internal/args.js"

const line = (id: string) => TestData.productLines.find((candidate) => candidate.id === id)!
const decimal = BigDecimal.fromStringUnsafe
const format = (amount: BigDecimal.BigDecimal) => BigDecimal.format(amount)

describe("Scenarios", () => {
  it("exchangeValue multiplies by the rate and rounds half-even to cents", () => {
    const rate = decimal("0.85")
    expect(format(Scenarios.exchangeValue(decimal("100.00"), rate))).toBe("85")
    expect(format(Scenarios.exchangeValue(decimal("11.30"), rate))).toBe("9.6") // 9.605: the tie goes to the even 0
    expect(format(Scenarios.exchangeValue(decimal("11.50"), rate))).toBe("9.78") // 9.775: the tie goes to the even 8
    expect(format(Scenarios.exchangeValue(decimal("12.35"), rate))).toBe("10.5") // 10.4975: no tie
    expect(format(Scenarios.exchangeValue(decimal("10.10"), decimal("0.925")))).toBe("9.34")
  })

  it("derivedBalance is deterministic, in cents, and within the product line's range", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[0-9]{12,19}$/),
        fc.constantFrom(...TestData.productLines),
        (card, productLine) => {
          const balance = Scenarios.derivedBalance(card, productLine)
          expect(BigDecimal.equals(balance, Scenarios.derivedBalance(card, productLine))).toBe(true)
          expect(BigDecimal.normalize(balance).scale).toBeLessThanOrEqual(2)
          expect(BigDecimal.between(balance, { minimum: productLine.min, maximum: productLine.max })).toBe(true)
          expect(BigDecimal.isLessThanOrEqualTo(balance, BigDecimal.sum(productLine.min, decimal("500")))).toBe(true)
        }
      )
    )
  })

  const plan = (
    cardNumber: string,
    options: { pin?: string; productLineId?: string; partner?: TestData.Partner } = {}
  ) =>
    Scenarios.plan({
      cardNumber,
      pin: options.pin ?? TestData.pin,
      productLine: line(options.productLineId ?? "1000"),
      partner: options.partner ?? TestData.partner,
      timeScale: 1
    })

  it("every table card plays its row", () => {
    expect(plan(TestData.Cards.success)).toMatchObject({ scenario: "success", durationMillis: 2_000 })
    expect(plan(TestData.Cards.instant)).toMatchObject({ scenario: "instant", durationMillis: 0 })
    expect(plan(TestData.Cards.slow)).toMatchObject({ scenario: "slow", durationMillis: 30_000 })
    const refusals = [
      [TestData.Cards.zeroBalance, ErrorBody.ErrorCodes.cardValueOutOfRange],
      [TestData.Cards.invalid, ErrorBody.ErrorCodes.invalidCard],
      [TestData.Cards.notAccepted, ErrorBody.ErrorCodes.cardNotAccepted],
      [TestData.Cards.merchantUnavailable, ErrorBody.ErrorCodes.merchantUnavailable]
    ] as const
    for (const [card, code] of refusals) {
      const result = plan(card).result
      expect(result._tag === "Refused" && result.error.ErrorCode).toBe(code)
    }
  })

  it("PIN 0000 refuses any card; the time scale scales the duration", () => {
    const result = plan(TestData.Cards.instant, { pin: TestData.rejectedPin })
    expect(result.result._tag === "Refused" && result.result.error.ErrorCode).toBe(ErrorBody.ErrorCodes.invalidCard)
    const fast = Scenarios.plan({
      cardNumber: TestData.Cards.success,
      pin: TestData.pin,
      productLine: line("1000"),
      partner: TestData.partner,
      timeScale: 0.01
    })
    expect(fast.durationMillis).toBe(20)
  })

  it("a human-inquiry partner's refusal speaks with its agent's voice", () => {
    const merchant = plan(TestData.Cards.merchantUnavailable).result
    const agent = plan(TestData.Cards.merchantUnavailable, { partner: TestData.agentPartner }).result
    expect(merchant._tag === "Refused" && merchant.error.UserMessage).toBe(
      "The merchant cannot be reached right now. Please try again later."
    )
    expect(agent._tag === "Refused" && agent.error.UserMessage).toBe(
      "Robin at the balance desk: I could not reach the merchant's balance line. Please try again later."
    )
  })

  it("a balance outside the product line's range is refused with the range in the UserMessage", () => {
    const result = plan(TestData.Cards.success, { productLineId: "3000" }).result
    expect(result._tag).toBe("Refused")
    expect(result._tag === "Refused" && result.error.UserMessage).toBe(
      "This card has a balance of $100.00; Sandbox Cinema cards are accepted from $1.00 to $50.00."
    )
  })
})

describe("Lifecycle", () => {
  const transaction = (durationMillis: number): Store.Transaction => ({
    id: "T",
    clientId: TestData.partner.clientId,
    creatorId: 1001,
    requestId: "r",
    previousAttempts: 0,
    createdAt: 1_000_000,
    maskedCardNumber: "****0001",
    productLineId: "1000",
    plan: {
      scenario: "success",
      durationMillis,
      result: { _tag: "Quoted", actualCardValue: decimal("100"), exchangeCardValue: decimal("85") }
    }
  })

  it("progress is a function of time: vault for the first 40%, then the fraud check", () => {
    const tx = transaction(2_000)
    expect(Lifecycle.progressAt(tx, 1_000_000)).toMatchObject({
      isCompleted: false,
      percentComplete: 0,
      expectedCompletionTime: 2,
      vaultCompletedAt: 1_000_800,
      completedAt: 1_002_000
    })
    expect(Lifecycle.progressAt(tx, 1_001_001)).toMatchObject({ percentComplete: 50, expectedCompletionTime: 0.999 })
    expect(Lifecycle.progressAt(tx, 1_001_999)).toMatchObject({ isCompleted: false, percentComplete: 99 })
    expect(Lifecycle.progressAt(tx, 1_002_000)).toMatchObject({
      isCompleted: true,
      percentComplete: 100,
      expectedCompletionTime: 0
    })
  })

  it("percentComplete never goes down and reaches 100 exactly at completion", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 60_000 }), fc.array(fc.nat(70_000)), (duration, offsets) => {
      const tx = transaction(duration)
      const sorted = [...offsets].sort((a, b) => a - b)
      const percents = sorted.map((offset) => Lifecycle.progressAt(tx, tx.createdAt + offset).percentComplete)
      expect(percents).toEqual([...percents].sort((a, b) => a - b))
      sorted.forEach((offset, i) => expect(percents[i] === 100).toBe(offset >= duration))
    }))
  })

  it("a refused check answers its Error once done, never before", () => {
    const error = new ErrorBody.ErrorBody({ ErrorCode: ErrorBody.ErrorCodes.invalidCard })
    const tx: Store.Transaction = {
      ...transaction(1_000),
      plan: { scenario: "invalid", durationMillis: 1_000, result: { _tag: "Refused", error } }
    }
    expect(Result.isSuccess(Lifecycle.statusAt(tx, 1_000_999))).toBe(true)
    expect(Lifecycle.statusAt(tx, 1_001_000)).toEqual(Result.fail(error))
    expect(Lifecycle.quoteAt(tx, 1_005_000).isCompleted).toBe(false)
    expect(Lifecycle.summaryAt(tx, 1_005_000)).toMatchObject({ state: "failed", errorCode: error.ErrorCode })
  })
})

describe("Jwt", () => {
  const key = new Uint8Array(32).fill(7)
  const claims: Jwt.Claims = {
    iss: "gcx-sandbox",
    sub: "p",
    client_id: "p",
    scope: "s",
    token_use: "access",
    iat: 100,
    exp: 200,
    jti: "j"
  }

  it("verifies what it signs until exp", () => {
    const token = Jwt.sign(claims, key)
    expect(Jwt.verify(token, key, 150)).toEqual(Result.succeed(claims))
    expect(Jwt.verify(token, key, 199.999)).toEqual(Result.succeed(claims))
    expect(Jwt.verify(token, key, 200)).toEqual(Result.fail(new Jwt.JwtError({ reason: "Expired" })))
  })

  it("refuses another key, a tampered payload, another algorithm and garbage", () => {
    const token = Jwt.sign(claims, key)
    const [header, , signature] = token.split(".")
    const tampered = `${header}.${
      Buffer.from(JSON.stringify({ ...claims, sub: "q" })).toString("base64url")
    }.${signature}`
    const none = `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${token.split(".")[1]}.`
    const reason = (candidate: string, withKey = key) =>
      Result.match(Jwt.verify(candidate, withKey, 150), {
        onFailure: (error) => error.reason,
        onSuccess: () => "valid"
      })
    expect(reason(token, new Uint8Array(32))).toBe("Signature")
    expect(reason(tampered)).toBe("Signature")
    expect(reason(none)).toBe("Malformed")
    expect(reason("a.b")).toBe("Malformed")
    expect(reason("a.b.c")).toBe("Malformed")
  })
})

describe("Tokens", () => {
  const second = 1_700_000_000_000

  it.effect("a 1 s token issued at any millisecond of a second lives at least 1 s, and at most 2 s", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens.make({ lifetimeSeconds: 1 })
      for (const offset of [0, 1, 250, 500, 998, 999]) {
        const issuedAt = second + offset
        yield* TestClock.setTime(issuedAt)
        const issued = yield* tokens.issue(TestData.partner, "s")
        expect(issued.expiresIn).toBe(1)
        const validAt = (millis: number) =>
          TestClock.setTime(millis).pipe(Effect.andThen(Effect.result(tokens.verify(issued.accessToken))))
        for (const later of [0, 1, 500, 999]) {
          expect(Result.isSuccess(yield* validAt(issuedAt + later)), `issued at +${offset}, checked ${later} ms later`)
            .toBe(true)
        }
        // it expires on the first whole second at or after the promised lifetime
        const expiresAt = Math.ceil((issuedAt + 1000) / 1000) * 1000
        expect(Result.isSuccess(yield* validAt(expiresAt - 1))).toBe(true)
        expect(yield* validAt(expiresAt)).toEqual(Result.fail(new Jwt.JwtError({ reason: "Expired" })))
        expect(expiresAt - issuedAt).toBeGreaterThanOrEqual(1000)
        expect(expiresAt - issuedAt).toBeLessThan(2000)
      }
    }))

  it("claimTimes: exp is the promised end rounded up; lifetime 0 is already expired", () => {
    expect(Tokens.claimTimes(second + 999, 1)).toEqual({ iat: 1_700_000_000, exp: 1_700_000_002 })
    expect(Tokens.claimTimes(second, 3600)).toEqual({ iat: 1_700_000_000, exp: 1_700_003_600 })
    expect(Tokens.claimTimes(second + 1, 3600)).toEqual({ iat: 1_700_000_000, exp: 1_700_003_601 })
    for (const offset of [0, 1, 999]) {
      const { exp } = Tokens.claimTimes(second + offset, 0)
      expect(exp * 1000).toBeLessThanOrEqual(second + offset)
    }
  })

  it.effect("a 0 s token is refused at once", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens.make({ lifetimeSeconds: 0 })
      yield* TestClock.setTime(second + 500)
      const issued = yield* tokens.issue(TestData.partner, "s")
      expect(yield* Effect.result(tokens.verify(issued.accessToken))).toEqual(
        Result.fail(new Jwt.JwtError({ reason: "Expired" }))
      )
    }))
})

describe("pnpm sandbox arguments", () => {
  it("defaults to port 4010 and request logs at Info", () => {
    expect(Args.parse([])).toEqual(
      Result.succeed(expect.objectContaining({ port: 4010, logLevel: "Info", faults: [] }))
    )
    expect(Args.parse(["--help"])).toEqual(Result.succeed("help"))
    expect(Args.parse(["--", "--port", "0"])).toEqual(Result.succeed(expect.objectContaining({ port: 0 })))
  })

  it("reads every flag", () => {
    const parsed = Args.parse([
      "--port",
      "0",
      "--host",
      "0.0.0.0",
      "--allowed-host",
      "gcx.test",
      "--allowed-host",
      "sandbox.lan",
      "--auth-port",
      "4011",
      "--stage",
      "uat",
      "--time-scale",
      "0.5",
      "--token-lifetime",
      "60",
      "--admin-key",
      "k",
      "--seed",
      "42",
      "--fault",
      "createQuote:status503:0.2",
      "--fault",
      "getTransaction:reset:times=1",
      "--latency",
      "100-300",
      "--max-dashboard-streams",
      "4",
      "--quiet"
    ])
    expect(parsed).toEqual(Result.succeed({
      port: 0,
      host: "0.0.0.0",
      allowedHosts: ["gcx.test", "sandbox.lan"],
      authPort: 4011,
      stage: "uat",
      timeScale: 0.5,
      tokenLifetimeSeconds: 60,
      adminKey: "k",
      seed: 42,
      faults: [
        { route: "createQuote", kind: "status503", probability: 0.2 },
        { route: "getTransaction", kind: "reset", times: 1 },
        { route: "any", kind: "latency", latencyMillis: { min: 100, max: 300 } }
      ],
      maxDashboardStreams: 4,
      logLevel: "None"
    }))
  })

  it("refuses bad values and unknown flags", () => {
    for (
      const argv of [["--port", "x"], ["--fault", "nowhere:reset"], ["--log-level", "Loud"], ["--colour"], [
        "--max-dashboard-streams",
        "0"
      ], [
        "--time-scale",
        "-1"
      ]]
    ) {
      expect(Result.isFailure(Args.parse(argv))).toBe(true)
    }
  })
})

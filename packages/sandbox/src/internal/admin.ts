import { ErrorBody, Redaction } from "@gcx/core"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { AdminAuthorization, BadRequest, Forbidden, NotFound, SandboxApi, Settings, Unauthorized } from "../Api.js"
import * as Faults from "../Faults.js"
import * as Journal from "../Journal.js"
import { Store } from "../Store.js"
import { Tokens } from "../Tokens.js"
import { readJson } from "./body.js"
import { SandboxConfig } from "./config.js"
import { safeEqual } from "./credentials.js"
import * as Dashboard from "./dashboard.js"
import * as State from "./state.js"

/** The `x-admin-key` check: missing answers 401, wrong 403. */
export const AdminAuthorizationLive = Layer.effect(
  AdminAuthorization,
  SandboxConfig.useSync((config) =>
    AdminAuthorization.of({
      adminKey: (httpEffect, { credential }) => {
        const given = Redacted.value(credential)
        if (given === "") {
          return Effect.fail(
            new Unauthorized({
              ErrorCode: ErrorBody.ErrorCodes.unauthorized,
              Message: "The x-admin-key header is required"
            })
          )
        }
        return safeEqual(given, config.adminKey) ? httpEffect : Effect.fail(
          new Forbidden({ ErrorCode: ErrorBody.ErrorCodes.unauthorized, Message: "The x-admin-key header is wrong" })
        )
      }
    })
  )
)

/** Decodes a JSON body; the failure names the failing paths, never the values. */
const decodeBody = <S extends Schema.Decoder<unknown>>(
  schema: S,
  body: unknown
): Effect.Effect<S["Type"], BadRequest> =>
  Schema.decodeUnknownEffect(schema)(body).pipe(
    Effect.mapError((error) =>
      new BadRequest({
        ErrorCode: ErrorBody.ErrorCodes.invalidBody,
        Message: Redaction.describeParseIssue(error.issue)
      })
    )
  )

const FaultRules = Schema.Array(Faults.FaultRule)

/** The admin API: journal, transactions, faults, settings, reset and partner switches. */
export const AdminLive = HttpApiBuilder.group(SandboxApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const config = yield* SandboxConfig
    const store = yield* Store
    const recorder = yield* Journal.Recorder
    const injector = yield* Faults.FaultInjector
    const tokens = yield* Tokens
    const context = yield* Effect.context<Store | Journal.Recorder | Faults.FaultInjector | Tokens>()
    const events = yield* Dashboard.makeEvents
    const switchPartner = (clientId: string, enabled: boolean) =>
      config.partners.some((partner) => partner.clientId === clientId)
        ? store.setEnabled(clientId, enabled)
        : Effect.fail(
          new NotFound({ ErrorCode: ErrorBody.ErrorCodes.partnerNotFound, Message: "No partner has this id" })
        )
    return handlers
      .handle("journal", () => recorder.snapshot)
      .handle("transactions", () => State.transactions.pipe(Effect.provide(context)))
      .handle("faults", () => injector.rules)
      .handleRaw("events", () => events)
      .handleRaw("setFaults", ({ request }) =>
        Effect.gen(function*() {
          const rules = yield* Effect.flatMap(readJson(request), (body) => decodeBody(FaultRules, body))
          yield* injector.set(rules)
          return rules
        }))
      .handle(
        "settings",
        () => Effect.map(tokens.lifetimeSeconds, (tokenLifetimeSeconds) => ({ tokenLifetimeSeconds }))
      )
      .handleRaw("setSettings", ({ request }) =>
        Effect.gen(function*() {
          const settings = yield* Effect.flatMap(readJson(request), (body) => decodeBody(Settings, body))
          yield* tokens.setLifetimeSeconds(settings.tokenLifetimeSeconds)
          return settings
        }))
      .handle("reset", () => State.reset.pipe(Effect.provide(context)))
      .handle("disablePartner", ({ params }) => switchPartner(params.clientId, false))
      .handle("enablePartner", ({ params }) => switchPartner(params.clientId, true))
  }))

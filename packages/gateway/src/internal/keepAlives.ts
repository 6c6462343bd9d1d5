/**
 * The keep-alive of the gateway's open event streams: one ticker per event
 * log wakes all of them every `interval` while any is open (each then sends
 * a comment, so that proxies keep it open), and `wakeAll` wakes them at once
 * when the gateway drains. One timer for all the open streams, not one fiber
 * each. It also counts what each API key holds open (its streams and its
 * waiting POSTs), so that one key cannot hold more than `MaxHeld`.
 */
import type * as EventLog from "@gcx/workflow/EventLog"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"

/** How often the open streams are woken. */
export const interval = Duration.seconds(15)

/** The open streams of one event log, how many each API key holds, and their ticker while any is open. */
interface Open {
  readonly wakes: Set<() => void>
  readonly held: Map<string, number>
  ticker: Fiber.Fiber<unknown> | undefined
}

/** How many open streams and waiting POSTs one API key may hold at once on a gateway, by default. */
export const defaultMaxHeld = 1_000

/** How many open streams and waiting POSTs one API key may hold at once on this gateway. */
export const MaxHeld = Context.Reference<number>("@gcx/gateway/internal/MaxHeld", {
  defaultValue: () => defaultMaxHeld
})

const byLog = new WeakMap<EventLog.Service, Open>()

/**
 * Registers `wake` with the one ticker of `log`'s streams (started by the
 * first, on its fiber's `Clock` and nothing else of its context: the ticker
 * holds no request), held by the API key `holder`, until the scope closes;
 * the ticker stops with the last stream. Whether it was registered: not when
 * `holder` holds `MaxHeld` already (checked and counted in one synchronous
 * step, so that streams opened at once never pass it together). The ticker is
 * started and recorded in the same step: two streams never start two.
 */
export const register = (
  log: EventLog.Service,
  wake: () => void,
  holder: string
): Effect.Effect<boolean, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.withFiber((fiber) => Effect.succeed(add(log, wake, holder, fiber))),
      (open) => open === undefined ? Effect.void : remove(open, wake, holder)
    ),
    (open) => open !== undefined
  )

/**
 * Adds `wake`, held by `holder`, to `log`'s open streams, starting their ticker on `fiber`'s
 * `Clock`; `undefined` (nothing added) when `holder` holds `MaxHeld` already.
 */
const add = (
  log: EventLog.Service,
  wake: () => void,
  holder: string,
  fiber: Fiber.Fiber<unknown, unknown>
): Open | undefined => {
  let open = byLog.get(log)
  if (open === undefined) {
    open = { wakes: new Set(), held: new Map(), ticker: undefined }
    byLog.set(log, open)
  }
  const held = open.held.get(holder) ?? 0
  if (atLimit(held, fiber)) return undefined
  open.wakes.add(wake)
  open.held.set(holder, held + 1)
  if (open.ticker === undefined) {
    const { wakes } = open
    const tick = Effect.sync(() => {
      for (const wake of wakes) wake()
    })
    open.ticker = Effect.runForkWith(Context.make(Clock.Clock, fiber.getRef(Clock.Clock)))(
      Effect.forever(Effect.andThen(Effect.sleep(interval), tick))
    )
  }
  return open
}

/** Removes `wake`, held by `holder`, from `open`; stops the ticker with the last stream. */
const remove = (open: Open, wake: () => void, holder: string) =>
  Effect.suspend(() => {
    open.wakes.delete(wake)
    const held = open.held.get(holder)! - 1
    if (held === 0) open.held.delete(holder)
    else open.held.set(holder, held)
    const ticker = open.ticker
    if (open.wakes.size > 0 || ticker === undefined) return Effect.void
    open.ticker = undefined
    return Fiber.interrupt(ticker)
  })

/**
 * Wakes every open stream of `log`: when the gateway drains, each ends after
 * one more read; one still waiting for its first events answers nothing.
 * Their clients resume with `Last-Event-ID` and lose nothing.
 */
export const wakeAll = (log: EventLog.Service): void => {
  const open = byLog.get(log)
  if (open === undefined) return
  for (const wake of open.wakes) wake()
}

/** How many registrations of `log` the API key `holder` holds now (its open streams and waiting POSTs). */
export const heldBy = (log: EventLog.Service, holder: string): number => byLog.get(log)?.held.get(holder) ?? 0

/** Whether a key that holds `held` places may take no more, under the limit `fiber` runs with (`MaxHeld`). */
const atLimit = (held: number, fiber: Fiber.Fiber<unknown, unknown>): boolean => held >= fiber.getRef(MaxHeld)

/**
 * Whether the API key `holder` holds all the places it may on `log` now: a check ahead of
 * `register`, which alone takes a place (and checks again, in the same step).
 */
export const full = (log: EventLog.Service, holder: string): Effect.Effect<boolean> =>
  Effect.withFiber((fiber) => Effect.succeed(atLimit(heldBy(log, holder), fiber)))

/**
 * The tolerant reader of service-notes.md ("decode strictly only what the SDK
 * actually relies on"): an answer whose optional hints (a percentage, a
 * timestamp, `expectedCompletionTime`) cannot be read is read without them,
 * and the caller learns which were dropped. Only the fields the SDK relies on
 * (ids, `isCompleted`, the card values) can fail a decode.
 *
 * An answer is first decoded strictly, as it is: the usual case costs nothing
 * more. Only when that fails are the hints that do not decode on their own
 * removed, and the rest decoded again.
 */
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * Where a resource's optional hints are: each hint field with the schema of
 * its value, and the nested records (by field) that have hints of their own.
 */
export interface Shape {
  readonly hints: { readonly [field: string]: Hint }
  readonly nested?: { readonly [field: string]: Shape } | undefined
}

/** The schema of one hint's value: any schema that decodes without services. */
export type Hint = Schema.Decoder<unknown>

/** A decoded answer, with the paths of the hints that were dropped (`response.expectedCompletionTime`). */
export interface Read<A> {
  readonly value: A
  readonly dropped: ReadonlyArray<string>
}

const nothingDropped: ReadonlyArray<string> = []

// One compiled check per hint schema.
const checks = new WeakMap<Hint, (value: unknown) => boolean>()
const readable = (schema: Hint, value: unknown): boolean => {
  let check = checks.get(schema)
  if (check === undefined) {
    const decode = Schema.decodeUnknownOption(schema)
    check = (value) => Option.isSome(decode(value))
    checks.set(schema, check)
  }
  return check(value)
}

/** A copy of `json` without the hints that do not decode (absent and `null` ones are left as they are). */
const withoutUnreadable = (json: unknown, shape: Shape, prefix: string, dropped: Array<string>): unknown => {
  if (!Predicate.isObject(json)) return json
  let out: Record<PropertyKey, unknown> | undefined
  for (const field in shape.hints) {
    const value = json[field]
    if (value === undefined || value === null || readable(shape.hints[field]!, value)) continue
    out ??= { ...json }
    delete out[field]
    dropped.push(`${prefix}${field}`)
  }
  for (const field in shape.nested) {
    const value = json[field]
    const cleaned = withoutUnreadable(value, shape.nested[field]!, `${prefix}${field}.`, dropped)
    if (cleaned !== value) {
      out ??= { ...json }
      out[field] = cleaned
    }
  }
  return out ?? json
}

/**
 * A decoder of `schema` that drops the hints of `shape` it cannot read. It
 * fails only when the answer does not decode without them either, with the
 * strict decode's error (which names every failing path).
 */
export const decoder = <A>(
  schema: Schema.Decoder<A>,
  shape: Shape
): (json: unknown) => Result.Result<Read<A>, Schema.SchemaError> => {
  const decode = Schema.decodeUnknownResult(schema)
  return (json) => {
    const strict = decode(json)
    if (Result.isSuccess(strict)) return Result.succeed({ value: strict.success, dropped: nothingDropped })
    const dropped: Array<string> = []
    const cleaned = withoutUnreadable(json, shape, "", dropped)
    if (dropped.length === 0) return Result.fail(strict.failure)
    return Result.match(decode(cleaned), {
      onFailure: () => Result.fail(strict.failure),
      onSuccess: (value) => Result.succeed({ value, dropped })
    })
  }
}

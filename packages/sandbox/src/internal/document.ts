/**
 * The last touches on the OpenAPI document that `OpenApi.fromApi` generates
 * from `SandboxApi`, so that third-party validators and code generators take
 * it as it is.
 */

/** OpenAPI's rule for component names. */
const componentName = /^[a-zA-Z0-9._-]+$/

/** A package-scoped schema identifier, `@gcx/core/QuoteResponse`, as the generator uses it for a description. */
const scopedIdentifier = /^@[\w-]+\/[\w-]+\/([\w.-]+)$/

/** The default stage segment, as documented. */
const documentedStage = "sandbox"

/** A JSON pointer segment (RFC 6901). */
const pointerSegment = (name: string): string => name.replaceAll("~", "~0").replaceAll("/", "~1")

/**
 * Plain names for the schemas that `@gcx/core` identifies as `@gcx/core/<Name>`
 * (OpenAPI allows only `[a-zA-Z0-9._-]` in component names): `TokenResponse`,
 * or `gcx.core.TokenResponse` should the plain name be taken by another schema.
 * Every `$ref` follows, and descriptions made of such an identifier become the plain name.
 */
const plainComponentNames = (spec: Record<string, any>): Record<string, any> => {
  const schemas: Record<string, unknown> = spec.components?.schemas ?? {}
  const renames = new Map<string, string>()
  for (const name of Object.keys(schemas)) {
    if (componentName.test(name)) continue
    const plain = name.slice(name.lastIndexOf("/") + 1).replace(/[^a-zA-Z0-9._-]/g, "_")
    const taken = plain in schemas || [...renames.values()].includes(plain)
    renames.set(name, taken ? name.replace(/^@/, "").replace(/[^a-zA-Z0-9._-]+/g, ".") : plain)
  }
  const refs = new Map(
    [...renames].map(([from, to]) => [`#/components/schemas/${pointerSegment(from)}`, `#/components/schemas/${to}`])
  )
  const rename = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rename)
    if (typeof value !== "object" || value === null) return value
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => {
        if (key === "$ref" && typeof inner === "string") return [key, refs.get(inner) ?? inner]
        if (key === "description" && typeof inner === "string") return [key, inner.replace(scopedIdentifier, "$1")]
        return [key, rename(inner)]
      })
    )
  }
  const renamed = rename(spec) as Record<string, any>
  renamed.components.schemas = Object.fromEntries(
    Object.entries(renamed.components.schemas).map(([name, schema]) => [renames.get(name) ?? name, schema])
  )
  return renamed
}

/**
 * Documents the staged form of the quote paths (`/{stage}/v3/exchange/quote`
 * and `/{stage}/v3/exchange/quote/{transactionId}`), which the sandbox serves
 * beside the plain form: the same operations with a `stage` path parameter,
 * and `Staged` appended to their operationIds.
 */
const stagedQuotePaths = (quotePath: string) => (spec: Record<string, any>): Record<string, any> => {
  const stage = {
    name: "stage",
    in: "path",
    required: true,
    description: `The stage segment (${documentedStage} unless the sandbox runs with --stage)`,
    schema: { type: "string", default: documentedStage }
  }
  const paths: Record<string, any> = {}
  for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
    paths[path] = item
    if (!path.startsWith(quotePath)) continue
    paths[`/{stage}${path}`] = Object.fromEntries(
      Object.entries(item).map(([method, operation]) => [method, {
        ...operation,
        operationId: `${operation.operationId}Staged`,
        parameters: [stage, ...operation.parameters]
      }])
    )
  }
  return { ...spec, paths }
}

const decodeErrorRef = "#/components/schemas/HttpApiDecodeError"

/**
 * Takes out the platform's `HttpApiDecodeError`, which `HttpApi.make` declares
 * under 400 for every endpoint: the sandbox never sends it (its middleware
 * answers a header or path that does not decode with an Error body,
 * `request.invalid.parameter`), so the document says what is really sent.
 */
const withoutDecodeError = (spec: Record<string, any>): Record<string, any> => {
  const clean = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(clean)
    if (typeof value !== "object" || value === null) return value
    const object = value as Record<string, unknown>
    if (Array.isArray(object.anyOf) && object.anyOf.some((option) => option?.$ref === decodeErrorRef)) {
      const rest = object.anyOf.filter((option) => option?.$ref !== decodeErrorRef).map(clean)
      const { anyOf: _, ...others } = object
      return rest.length === 1 ? { ...others, ...(rest[0] as object) } : { ...others, anyOf: rest }
    }
    return Object.fromEntries(Object.entries(object).map(([key, inner]) => [key, clean(inner)]))
  }
  const cleaned = clean(spec) as Record<string, any>
  // Issue and PropertyKey are the decode error's own parts
  const schemas = Object.fromEntries(
    Object.entries(cleaned.components.schemas).filter(([name]) =>
      !["HttpApiDecodeError", "Issue", "PropertyKey"].includes(name)
    )
  )
  const badRequest = "The request did not match the expected schema"
  const paths = JSON.parse(JSON.stringify(cleaned.paths).replaceAll(`"${badRequest}"`, `"Bad request (an Error body)"`))
  return { ...cleaned, paths, components: { ...cleaned.components, schemas } }
}

/**
 * The transform of the generated document (`OpenApi.Transform`): plain
 * component names, both quote path forms, and only the error bodies the
 * sandbox sends.
 */
export const finish = (quotePath: string) => (spec: Record<string, any>): Record<string, any> =>
  stagedQuotePaths(quotePath)(plainComponentNames(withoutDecodeError(spec)))

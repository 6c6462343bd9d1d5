/**
 * The last touches on the OpenAPI document that `OpenApi.fromApi` generates
 * from `SandboxApi`, so that third-party validators and code generators take
 * it as it is.
 */

/** A component name with the `_<n>` that the generator appends to tell apart schemas of the same name. */
const numbered = /^(.*?)(?:_(\d+))?$/

/** The generator's spelling of a package-scoped identifier: `@gcx/core/Card` becomes `_gcx_core_Card`. */
const scopedPrefix = /^_[A-Za-z0-9-]+_[A-Za-z0-9-]+_(?=.)/

/** A package-scoped schema identifier, `@gcx/core/QuoteResponse`, as it may show in a description. */
const scopedIdentifier = /^@[\w-]+\/[\w-]+\/([\w.-]+)$/

/** The default stage segment, as documented. */
const documentedStage = "sandbox"

/** A JSON pointer segment (RFC 6901). */
const pointerSegment = (name: string): string => name.replaceAll("~", "~0").replaceAll("/", "~1")

/**
 * Plain names for the component schemas: the generator names the encoded
 * side of a schema `<Identifier>Encoded`, spells the package-scoped
 * identifiers of `@gcx/core` (`@gcx/core/Card`) as `_gcx_core_Card`, and
 * numbers variants (`_1`, the nullable form of a schema). Each becomes its
 * plain name (`Card`, `QuoteRequest_1`), numbered only when the plain name is
 * taken. Every `$ref` follows, and descriptions made of a scoped identifier
 * become the plain name.
 */
const plainComponentNames = (spec: Record<string, any>): Record<string, any> => {
  const schemas: Record<string, unknown> = spec.components?.schemas ?? {}
  const plain = (name: string) => {
    const [, base = name, number] = numbered.exec(name)!
    return { base: base.replace(scopedPrefix, "").replace(/(?<=.)Encoded$/, ""), number: Number(number ?? 0) }
  }
  // Names the generator did not touch keep theirs; the others are renamed, unnumbered ones first.
  const renamed = Object.keys(schemas).filter((name) => plain(name).base !== numbered.exec(name)![1])
  const taken = new Set(Object.keys(schemas).filter((name) => !renamed.includes(name)))
  const renames = new Map<string, string>()
  for (const name of renamed.sort((left, right) => plain(left).number - plain(right).number)) {
    const { base } = plain(name)
    let candidate = base
    for (let index = 1; taken.has(candidate); index++) candidate = `${base}_${index}`
    taken.add(candidate)
    renames.set(name, candidate)
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
  const result = rename(spec) as Record<string, any>
  result.components.schemas = Object.fromEntries(
    Object.entries(result.components.schemas).map(([name, schema]) => [renames.get(name) ?? name, schema])
  )
  return result
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

/**
 * The transform of the generated document (`OpenApi.Transform`): plain
 * component names and both quote path forms.
 */
export const finish = (quotePath: string) => (spec: Record<string, any>): Record<string, any> =>
  stagedQuotePaths(quotePath)(plainComponentNames(spec))

/**
 * The `Host` names a sandbox serves, against DNS rebinding: a page on another
 * origin whose name resolves to 127.0.0.1 reaches the sandbox with its own
 * name in `Host`. Only names that are the sandbox's own are served: the
 * loopback names, the address it is bound to and the allowed hosts.
 *
 * A name is compared without its port and in lower case, with one trailing dot
 * (`localhost.`, the same name fully qualified) left out; addresses in their
 * canonical form (`[0:0:0:0:0:0:0:1]` is `[::1]`). A value that is not a plain
 * `host[:port]` (a user part, a path, a space) names nothing.
 */
import * as Result from "effect/Result"
import * as Os from "node:os"

/** The loopback names every sandbox serves. */
export const loopbackNames: ReadonlyArray<string> = ["localhost", "127.0.0.1", "[::1]"]

const hostSyntax = /^(?:\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::\d{1,5})?$/i

/** An address as a `Host` (or a URL) names it: IPv6 in brackets. */
export const bracketed = (host: string): string => host.includes(":") && !host.startsWith("[") ? `[${host}]` : host

/**
 * The name a `Host` header value (or an interface, an allowed host) gives, in
 * the form it is compared in; `undefined` when it is not a plain `host[:port]`.
 */
export const nameOf = (value: string): string | undefined => {
  if (!hostSyntax.test(value)) return undefined
  try {
    // The URL parser lower-cases names and writes addresses in their canonical form.
    const name = new URL(`http://${value}`).hostname
    const withoutDot = name.endsWith(".") ? name.slice(0, -1) : name
    return withoutDot === "" || withoutDot.endsWith(".") ? undefined : withoutDot
  } catch {
    return undefined
  }
}

/** Whether `host` (an interface to listen on, as given) is a loopback one: `localhost`, `127.x.x.x` or `::1`. */
export const isLoopback = (host: string): boolean => {
  const name = nameOf(bracketed(host))
  return name === "localhost" || name === "[::1]" || (name !== undefined && /^127\.\d+\.\d+\.\d+$/.test(name))
}

/** Whether `host` (an interface to listen on) is every interface: `0.0.0.0` or `::`. */
export const isWildcard = (host: string): boolean => {
  const name = nameOf(bracketed(host))
  return name === "0.0.0.0" || name === "[::]"
}

/** The addresses of this machine's interfaces, as `Host` names them. */
const interfaceNames = (): ReadonlyArray<string> =>
  Object.values(Os.networkInterfaces()).flatMap((addresses) =>
    (addresses ?? []).flatMap((address) => {
      const name = address.scopeid ? undefined : nameOf(bracketed(address.address))
      return name === undefined ? [] : [name]
    })
  )

/**
 * The names a sandbox listening on `host` serves: the loopback names, `host`
 * itself (each interface's address when it is a wildcard), and `allowed`; or
 * what is wrong with an allowed host.
 */
export const served = (host: string, allowed: ReadonlyArray<string>): Result.Result<ReadonlyArray<string>, string> =>
  Result.map(
    Result.all(allowed.map((value) => {
      const name = nameOf(value.trim())
      return name === undefined
        ? Result.fail(
          `the allowed host "${value}" is not a host name: give a name or an address, such as gcx.test ` +
            "or 192.168.1.20, without a scheme or a path"
        )
        : Result.succeed(name)
    })),
    (names) => {
      const own = isWildcard(host) ? interfaceNames() : [nameOf(bracketed(host)) ?? host]
      return Array.from(new Set([...loopbackNames, ...own, ...names]))
    }
  )

/**
 * A predicate on a request's `Host` header: whether it names one of `names`
 * (as `served` gives them) or `boundHost`, the address the server is bound to.
 * The usual values (a name with the server's own port, or none) are looked up
 * as they are; only others are parsed.
 */
export const checker = (
  names: ReadonlyArray<string>,
  bound: { readonly hostname: string; readonly port: number }
): (header: string | undefined) => boolean => {
  const all = new Set([...names, nameOf(bracketed(bound.hostname)) ?? bound.hostname])
  const exact = new Set([...all].flatMap((name) => [name, `${name}:${bound.port}`]))
  return (header) => {
    if (header === undefined) return false
    if (exact.has(header)) return true
    const name = nameOf(header)
    return name !== undefined && all.has(name)
  }
}

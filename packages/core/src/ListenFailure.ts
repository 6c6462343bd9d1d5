/**
 * What a server that could not listen says, from the error Node gave
 * (`server.listen`'s `error` event): the address, when Node named it, and the
 * system's reason, in one phrase; never a stack trace.
 */

/** ` on 127.0.0.1:8790: the port is in use (EADDRINUSE)`, to follow `cannot listen`. */
export const describe = (cause: unknown): string => {
  const error = (typeof cause === "object" && cause !== null ? cause : {}) as {
    readonly code?: unknown
    readonly address?: unknown
    readonly port?: unknown
  }
  const where = typeof error.address === "string" && typeof error.port === "number"
    ? ` on ${error.address}:${error.port}`
    : ""
  const reason = error.code === "EADDRINUSE"
    ? "the port is in use (EADDRINUSE)"
    : error.code === "EACCES"
    ? "permission denied (EACCES)"
    : error.code === "EADDRNOTAVAIL"
    ? "no such address on this machine (EADDRNOTAVAIL)"
    : typeof error.code === "string"
    ? error.code
    : "the server did not start"
  return `${where}: ${reason}`
}

/**
 * How the nodes of a cluster authenticate each other: mutual TLS. Each node (runner or client-only)
 * holds a certificate and key signed by the cluster's own CA (`GCX_RUNNER_TLS_CA`,
 * `GCX_RUNNER_TLS_CERT`, `GCX_RUNNER_TLS_KEY`: PEM text or a file path each). A runner accepts a
 * connection only once its TLS 1.3 handshake has proven a certificate of that CA; the cluster reads no
 * byte before. Every certificate of the CA is a member: use a CA for this cluster alone (host names are
 * not checked, the runners' addresses come from the shared database).
 *
 * Without certificates, a runner may run with `insecureLoopback` only (plain TCP on a loopback
 * address, for a single machine): `GCX_RUNNER_INSECURE_LOOPBACK=true` or `gcx runner --insecure-loopback`.
 *
 * Frames are bounded on every connection (`Limits`): at most `maxFrameBytes` (`GCX_RUNNER_MAX_FRAME_BYTES`,
 * default 1 MiB), and a partial frame that stalls for `stallTimeout` closes the connection. Refused
 * connections are counted in `gcx.cluster.connections.refused` (label `reason`).
 */
import * as HttpMetrics from "@gcx/http/Metrics"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"

/** The cluster's certificates: the CA, this node's certificate and its key (PEM). */
export interface Tls {
  readonly _tag: "Tls"
  readonly ca: string
  readonly cert: string
  readonly key: Redacted.Redacted<string>
}

/** Plain TCP, on loopback addresses only: one machine, no authentication. */
export interface InsecureLoopback {
  readonly _tag: "InsecureLoopback"
}

/** How a node authenticates the others. */
export type Security = Tls | InsecureLoopback

/** Mutual TLS with these PEM texts. */
export const tls = (
  pem: { readonly ca: string; readonly cert: string; readonly key: Redacted.Redacted<string> }
): Tls => ({
  _tag: "Tls",
  ...pem
})

/** No authentication, on loopback only. */
export const insecureLoopback: InsecureLoopback = { _tag: "InsecureLoopback" }

/** Bounds of every cluster connection. */
export interface Limits {
  /** The longest frame accepted, in bytes (default 1 MiB). */
  readonly maxFrameBytes: number
  /** How long a frame may stay incomplete with no byte coming (default 10 s). */
  readonly stallTimeout: Duration.Duration
  /** How long a TLS handshake may take (default 5 s). */
  readonly handshakeTimeout: Duration.Duration
}

/** 1 MiB. */
export const defaultMaxFrameBytes = 1024 * 1024

/** The default limits. */
export const defaultLimits: Limits = {
  maxFrameBytes: defaultMaxFrameBytes,
  stallTimeout: Duration.seconds(10),
  handshakeTimeout: Duration.seconds(5)
}

/** The variables of the certificates. */
export const tlsVariables = ["GCX_RUNNER_TLS_CA", "GCX_RUNNER_TLS_CERT", "GCX_RUNNER_TLS_KEY"] as const

/** The words of the message of a missing certificate variable. */
export const notSet = "is not set: the cluster's nodes authenticate with TLS certificates"

/** Whether `host` is a loopback address (`127.0.0.0/8`, `::1`, `localhost`). */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || (Net.isIPv4(host) && host.startsWith("127."))

const problem = (name: string, issue: SchemaIssue.Issue) => new SchemaIssue.Pointer([name], issue)

const configError = (issues: ReadonlyArray<SchemaIssue.Issue>): Config.ConfigError =>
  new Config.ConfigError(
    new Schema.SchemaError(
      issues.length === 1 ? issues[0]! : new SchemaIssue.Composite(Schema.String.ast, issues as never)
    )
  )

/** A PEM given as text, or read from the file it names. */
const readPem = (name: string, value: string): Effect.Effect<string, Config.ConfigError> =>
  value.includes("-----BEGIN ")
    ? Effect.succeed(value)
    : Effect.try({
      try: () => Fs.readFileSync(value, "utf8"),
      catch: () =>
        configError([
          problem(name, new SchemaIssue.InvalidValue({ message: `cannot read the PEM file "${value}"` }))
        ])
    }).pipe(
      Effect.filterOrFail(
        (pem) => pem.includes("-----BEGIN "),
        () => configError([problem(name, new SchemaIssue.InvalidValue({ message: `"${value}" holds no PEM` }))])
      )
    )

/** The certificates of a PEM text, in order; undefined when it holds none, or one that does not parse. */
const certificates = (pem: string): ReadonlyArray<Crypto.X509Certificate> | undefined => {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  try {
    return blocks.length === 0 ? undefined : blocks.map((block) => new Crypto.X509Certificate(block))
  } catch {
    return undefined
  }
}

/** The private key of a PEM text; undefined when it is not one. */
const privateKey = (pem: string): Crypto.KeyObject | undefined => {
  try {
    return Crypto.createPrivateKey(pem)
  } catch {
    return undefined
  }
}

/** Whether `issuer` signed `cert`. */
const signed = (cert: Crypto.X509Certificate, issuer: Crypto.X509Certificate): boolean =>
  cert.checkIssued(issuer) && cert.verify(issuer.publicKey)

/** Whether `cert` was signed by one of `authorities`, directly or through `intermediates` (at most 8 links). */
const chainsTo = (
  cert: Crypto.X509Certificate,
  intermediates: ReadonlyArray<Crypto.X509Certificate>,
  authorities: ReadonlyArray<Crypto.X509Certificate>
): boolean => {
  let current = cert
  for (let link = 0; link < 8; link++) {
    if (authorities.some((ca) => signed(current, ca))) return true
    const next = intermediates.find((intermediate) => intermediate !== current && signed(current, intermediate))
    if (next === undefined) return false
    current = next
  }
  return false
}

/**
 * The certificates of `security`, checked as TLS will use them, so that a bad one is a
 * configuration error at the start, naming its variable, never a handshake that fails later (a
 * client that waits for ever, a runner that dies): each PEM parses, the certificate is the CA's,
 * and the key is the certificate's.
 */
const checked = (security: Tls): Effect.Effect<Tls, Config.ConfigError> => {
  const refuse = (name: string, message: string) =>
    Effect.fail(configError([problem(name, new SchemaIssue.InvalidValue({ message }))]))
  // the CA may be a bundle (the old and the new CA during a rotation); the certificate, a chain (leaf first)
  const authorities = certificates(security.ca)
  if (authorities === undefined) {
    return refuse(tlsVariables[0], `${tlsVariables[0]} is not a PEM certificate (or a bundle of them)`)
  }
  const chain = certificates(security.cert)
  if (chain === undefined) return refuse(tlsVariables[1], `${tlsVariables[1]} is not a PEM certificate (or a chain)`)
  const [cert, ...intermediates] = chain as readonly [Crypto.X509Certificate, ...Array<Crypto.X509Certificate>]
  const key = privateKey(Redacted.value(security.key))
  if (key === undefined) return refuse(tlsVariables[2], `${tlsVariables[2]} is not a PEM private key`)
  if (!cert.checkPrivateKey(key)) {
    return refuse(
      tlsVariables[2],
      `${tlsVariables[2]} is not the key of ${
        tlsVariables[1]
      }'s certificate: give this node's certificate with its own key`
    )
  }
  if (!chainsTo(cert, intermediates, authorities)) {
    return refuse(
      tlsVariables[1],
      `${tlsVariables[1]}'s certificate is not signed by ${
        tlsVariables[0]
      }: give the cluster's CA and a certificate it signed`
    )
  }
  return Effect.succeed(security)
}

/**
 * The security of a node from the environment: the certificates of `GCX_RUNNER_TLS_*`, all three; else
 * `insecureLoopback` if `insecureLoopback` is true or `GCX_RUNNER_INSECURE_LOOPBACK=true`; else a
 * `ConfigError` naming the missing variables, or the one whose certificate or key is bad (`checked`).
 */
export const securityConfig = (insecureLoopbackFlag = false): Config.Config<Security> =>
  Config.all({
    ca: Config.option(Config.String(tlsVariables[0])),
    cert: Config.option(Config.String(tlsVariables[1])),
    key: Config.option(Config.Redacted(tlsVariables[2])),
    insecure: Config.Boolean("GCX_RUNNER_INSECURE_LOOPBACK").pipe(Config.withDefault(false))
  }).pipe(
    Config.mapEffect(({ ca, cert, insecure, key }): Effect.Effect<Security, Config.ConfigError> => {
      const present = [Option.isSome(ca), Option.isSome(cert), Option.isSome(key)]
      const given = present.filter(Boolean).length
      if (given === 0 && (insecure || insecureLoopbackFlag)) return Effect.succeed(insecureLoopback)
      if (given < 3) {
        const missing = tlsVariables.filter((_, i) => !present[i])
        return Effect.fail(configError(missing.map((name) =>
          problem(
            name,
            new SchemaIssue.MissingKey({
              messageMissingKey: `${name} ${notSet} (${
                tlsVariables.join(", ")
              }), or run on loopback only with GCX_RUNNER_INSECURE_LOOPBACK=true (gcx runner --insecure-loopback)`
            })
          )
        )))
      }
      return Effect.all({
        ca: readPem(tlsVariables[0], Option.getOrThrow(ca)),
        cert: readPem(tlsVariables[1], Option.getOrThrow(cert)),
        key: Effect.map(readPem(tlsVariables[2], Redacted.value(Option.getOrThrow(key))), Redacted.make)
      }).pipe(Effect.map(tls), Effect.flatMap(checked))
    })
  )

/** The limits from the environment: `GCX_RUNNER_MAX_FRAME_BYTES` (default 1 MiB), the rest by default. */
export const limitsConfig: Config.Config<Limits> = Config.Int("GCX_RUNNER_MAX_FRAME_BYTES").pipe(
  Config.withDefault(defaultMaxFrameBytes),
  Config.mapEffect((maxFrameBytes) =>
    maxFrameBytes >= 1024
      ? Effect.succeed({ ...defaultLimits, maxFrameBytes })
      : Effect.fail(configError([
        problem(
          "GCX_RUNNER_MAX_FRAME_BYTES",
          new SchemaIssue.InvalidValue({ message: `must be at least 1024, got ${maxFrameBytes}` })
        )
      ]))
  )
)

/** Why a connection was refused: a failed TLS handshake, or a frame over the limit, malformed or stalled. */
export type RefusalReason = "handshake" | "frame_too_large" | "malformed_frame" | "stalled_frame"

/** The family of `gcx.cluster.connections.refused`. */
export const connectionsRefusedFamily: HttpMetrics.Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.cluster.connections.refused", {
    description: "Cluster connections closed before or while reading them: failed authentication or bad frames",
    incremental: true,
    attributes
  })

const refusedByReason = HttpMetrics.memoize((reason) => HttpMetrics.labelled(connectionsRefusedFamily, { reason }))

/** Counts one refused connection. */
export const recordRefused = (reason: RefusalReason): Effect.Effect<void> =>
  HttpMetrics.update(refusedByReason(reason), 1)

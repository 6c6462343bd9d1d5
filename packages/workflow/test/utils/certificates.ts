/**
 * Throwaway certificates for the cluster's mutual TLS, made with the `openssl` command: a CA and a
 * node certificate signed by it (P-256), in a temporary folder removed with the process.
 */
import { Redacted } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as ClusterSecurity from "../../src/ClusterSecurity.js"

/** The PEM files of a CA and one node certificate it signed. */
export interface Certificates {
  readonly ca: string
  readonly cert: string
  readonly key: string
  /** The variables a process reads them from (the paths of the files). */
  readonly env: Record<string, string>
  /** As the library takes them. */
  readonly security: ClusterSecurity.Tls
}

const openssl = (dir: string, args: ReadonlyArray<string>) =>
  ChildProcess.execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] })

/** A new CA named `name` and a node certificate signed by it. */
export const make = (name: string): Certificates => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), `gcx-tls-${name}-`))
  process.once("exit", () => Fs.rmSync(dir, { recursive: true, force: true }))
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
  openssl(dir, ["req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", `/CN=${name} CA`])
  openssl(dir, ["req", ...ec, "-keyout", "node.key", "-out", "node.csr", "-subj", `/CN=${name} node`])
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    "node.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "node.pem",
    "-days",
    "2"
  ])
  const file = (f: string) => Path.join(dir, f)
  const read = (f: string) => Fs.readFileSync(file(f), "utf8")
  const [ca, cert, key] = [read("ca.pem"), read("node.pem"), read("node.key")]
  return {
    ca,
    cert,
    key,
    env: {
      GCX_RUNNER_TLS_CA: file("ca.pem"),
      GCX_RUNNER_TLS_CERT: file("node.pem"),
      GCX_RUNNER_TLS_KEY: file("node.key")
    },
    security: ClusterSecurity.tls({ ca, cert, key: Redacted.make(key) })
  }
}

/**
 * A root CA named `name`, an intermediate CA it signed, and a node certificate the intermediate
 * signed: `ca` is the root alone, `cert` the node's certificate followed by the intermediate's.
 */
export const makeChained = (name: string): Certificates => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), `gcx-tls-${name}-`))
  process.once("exit", () => Fs.rmSync(dir, { recursive: true, force: true }))
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
  const sign = (csr: string, issuer: string, out: string, extensions?: string) =>
    openssl(dir, [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      `${issuer}.pem`,
      "-CAkey",
      `${issuer}.key`,
      "-CAcreateserial",
      "-out",
      out,
      "-days",
      "2",
      ...(extensions === undefined ? [] : ["-extfile", extensions])
    ])
  openssl(dir, [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "root.key",
    "-out",
    "root.pem",
    "-days",
    "2",
    "-subj",
    `/CN=${name} root`
  ])
  Fs.writeFileSync(
    Path.join(dir, "ca.ext"),
    "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
  )
  openssl(dir, [
    "req",
    ...ec,
    "-keyout",
    "intermediate.key",
    "-out",
    "intermediate.csr",
    "-subj",
    `/CN=${name} intermediate`
  ])
  sign("intermediate.csr", "root", "intermediate.pem", "ca.ext")
  openssl(dir, ["req", ...ec, "-keyout", "node.key", "-out", "node.csr", "-subj", `/CN=${name} node`])
  sign("node.csr", "intermediate", "node.pem")
  const read = (f: string) => Fs.readFileSync(Path.join(dir, f), "utf8")
  const [ca, cert, key] = [read("root.pem"), read("node.pem") + read("intermediate.pem"), read("node.key")]
  return {
    ca,
    cert,
    key,
    env: { GCX_RUNNER_TLS_CA: ca, GCX_RUNNER_TLS_CERT: cert, GCX_RUNNER_TLS_KEY: key },
    security: ClusterSecurity.tls({ ca, cert, key: Redacted.make(key) })
  }
}

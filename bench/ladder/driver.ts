/**
 * Drives a ladder server (server.ts) under callgrind: `warmup` GETs on one
 * keep-alive connection, then zeroes callgrind's counters, sends `count`
 * GETs, dumps the counters and prints the instructions per request.
 *
 * Usage: node build/driver.mjs <step> <warmup> <count> [--no-callgrind | --cpu-prof | --autocannon]
 * (`--autocannon`: warm-up and rounds in seconds, 64 connections, server CPU from /proc).
 * (`--cpu-prof`: the server writes a V8 CPU profile into /tmp/ladder-prof).
 */
import { TestData } from "@gcx/sandbox"
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import { createRequire as makeRequire } from "node:module"
import * as path from "node:path"
import * as Cpu from "../internal/cpu.js"

const [step = "bare", warmupText = "2000", countText = "300"] = process.argv.slice(2)
const cpuProf = process.argv.includes("--cpu-prof")
const loadMode = process.argv.includes("--autocannon")
const useCallgrind = !process.argv.includes("--no-callgrind") && !cpuProf && !loadMode
const dir = path.dirname(new URL(import.meta.url).pathname)
const out = `/tmp/ladder-${step}-${process.pid}.cg`
const command = useCallgrind ? "valgrind" : process.execPath
const args = useCallgrind
  ? [
    "--tool=callgrind",
    `--callgrind-out-file=${out}`,
    "--dump-instr=no",
    process.execPath,
    // No background compilation or GC threads: their work would land in the count at random.
    "--single-threaded",
    path.join(dir, "server.mjs"),
    step
  ]
  : [...(cpuProf ? ["--cpu-prof", "--cpu-prof-dir=/tmp/ladder-prof"] : []), path.join(dir, "server.mjs"), step]
const child = ChildProcess.spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] })
const info = await new Promise<any>((resolve) => {
  let text = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    text += chunk.toString()
    const match = /READY (.*)\n/.exec(text)
    if (match) resolve(JSON.parse(match[1]!))
  })
})
const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
let url: URL
let headers: Record<string, string> = {}
if (step === "sandbox") {
  const base = info.baseUrl as string
  const { apiKey, clientId, clientSecret } = TestData.partner
  const token = await (await fetch(`${info.authUrl}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `grant_type=client_credentials&client_id=${clientId}&client_secret=${clientSecret}`
  })).json() as { access_token: string }
  headers = {
    authorization: `Bearer ${token.access_token}`,
    "x-api-key": apiKey,
    requestId: "0123456789abcdef0123456789abcdef",
    accept: "application/json"
  }
  const created = await (await fetch(`${base}/${info.stage}/v3/exchange/quote`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({
      card: {
        cardNumber: TestData.Cards.instant,
        pinNumber: TestData.pin,
        productLineId: TestData.defaultProductLineId
      }
    })
  })).json() as { transactionId: string }
  url = new URL(`${base}/${info.stage}/v3/exchange/quote/${created.transactionId}`)
} else {
  url = new URL(`http://127.0.0.1:${info.port}/v3/exchange/quote/abc`)
  headers = { authorization: "Bearer abc", accept: "application/json" }
}
const get = () =>
  new Promise<number>((resolve, reject) => {
    Http.get(url, { agent, headers }, (response) => {
      response.resume()
      response.once("end", () => resolve(response.statusCode!))
    }).once("error", reject)
  })
/** Server CPU ms (user + system) from /proc. */
const cpuMillis = (): number => Cpu.processMillis(child.pid!) ?? Number.NaN
const autocannon = (seconds: number) => {
  const args = [
    makeRequire(import.meta.url).resolve("autocannon/autocannon.js"),
    "--json",
    "--no-progress",
    "--connections",
    "64",
    "--duration",
    String(seconds),
    ...Object.entries(headers).flatMap(([name, value]) => ["--headers", `${name}=${value}`]),
    url.href
  ]
  const before = cpuMillis()
  const result = JSON.parse(ChildProcess.execFileSync(process.execPath, args, { maxBuffer: 1 << 24 }).toString())
  const used = cpuMillis() - before
  return {
    perRequest: used / (result["2xx"] + result.non2xx),
    errors: result.non2xx + result.errors,
    requests: result["2xx"]
  }
}
if (loadMode) {
  autocannon(Number(warmupText))
  const rounds = [autocannon(Number(countText)), autocannon(Number(countText)), autocannon(Number(countText))]
  const sorted = rounds.map((round) => round.perRequest).sort((a, b) => a - b)
  console.log(
    `${step}: ${
      sorted[1]!.toFixed(3)
    } ms of server CPU per request (median of 3 rounds of ${countText} s, 64 connections; errors ${
      rounds.reduce((n, r) => n + r.errors, 0)
    }; ${rounds.map((r) => r.requests).join("/")} requests)`
  )
  child.kill("SIGKILL")
  process.exit(0)
}
const first = await get()
if (first !== 200) throw new Error(`status ${first}`)
for (let i = 0; i < Number(warmupText); i++) await get()
const control = (flag: string) =>
  ChildProcess.execFileSync("callgrind_control", [flag, String(child.pid)], { stdio: "pipe" })
if (useCallgrind) control("-z")
const started = process.hrtime.bigint()
for (let i = 0; i < Number(countText); i++) await get()
const millis = Number(process.hrtime.bigint() - started) / 1e6
if (useCallgrind) {
  control("-d")
  const summary = ChildProcess.execFileSync("sh", ["-c", `grep -h '^summary\\|^totals' ${out}.* | head -1`]).toString()
  const instructions = Number(summary.split(/\s+/)[1])
  console.log(
    `${step}: ${
      Math.round(instructions / Number(countText))
    } instructions per request (${countText} after ${warmupText})`
  )
} else {
  console.log(`${step}: ${(millis / Number(countText)).toFixed(3)} ms per request wall`)
}
agent.destroy()
child.kill(cpuProf ? "SIGINT" : "SIGKILL")

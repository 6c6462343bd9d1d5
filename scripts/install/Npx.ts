/**
 * The sandbox as a newcomer starts it, `npx @gcx/cli sandbox` (the README's line) or
 * `npx @gcx/sandbox` (its `gcx-sandbox` bin), in the application where the tarballs are installed:
 * npx offline, so it runs the installed package and never asks the registry (where the unscoped
 * `gcx` is someone else's). Each starts on a free loopback port, answers, and stops on Ctrl+C.
 */
import * as Net from "node:net"
import { check } from "./Checks.js"
import { startService } from "./Process.js"
import type { NodeRuntime } from "./Runtimes.js"
import { environmentOn } from "./Runtimes.js"

/** The npx lines: what is typed after `npx`. */
export const lines: ReadonlyArray<ReadonlyArray<string>> = [["@gcx/cli", "sandbox"], ["@gcx/sandbox"]]

/** Whether something accepts connections on `port` of 127.0.0.1. */
const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = Net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

/** A GET of the running sandbox, bounded: its status, content type and body. */
const get = async (url: string) => {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) })
  return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
}

/** `npx --offline <line> --port 0` in `app` on `runtime`: started, asked for its docs and icon, stopped. */
export const checks = async (app: string, runtime: NodeRuntime): Promise<void> => {
  const env = environmentOn(runtime)
  // no GCX_* setting of the shell that runs the test (an admin key, say)
  for (const name of Object.keys(env)) if (name.startsWith("GCX_")) delete env[name]
  for (const line of lines) {
    await check(
      `npx ${line.join(" ")} on Node ${runtime.major} (offline): serves on loopback, stops`,
      true,
      async () => {
        const sandbox = await startService("npx", ["--offline", ...line, "--port", "0"], /Press Ctrl\+C to stop\./, {
          cwd: app,
          env,
          timeout: 90_000,
          processGroup: true
        })
        let api: URL
        try {
          api = new URL(/^ {2}API +(\S+)$/m.exec(sandbox.output())?.[1] ?? "missing:")
          if (api.hostname !== "127.0.0.1") return { fail: `not on loopback: ${api.href}` }
          const document = await get(new URL("/openapi.json", api).href)
          const described = document.status === 200 && JSON.parse(document.text).info.description
          if (typeof described !== "string" || !described.includes("sandbox-partner")) {
            return { fail: `/openapi.json: ${document.status}, no test partner in its description` }
          }
          const icon = await get(new URL("/favicon.ico", api).href)
          if (icon.status !== 200 || icon.type !== "image/svg+xml") return { fail: `/favicon.ico: ${icon.status}` }
        } finally {
          await sandbox.stop()
        }
        return await listening(Number(api.port)) ? { fail: `still listening on ${api.host} after Ctrl+C` } : api.host
      }
    )
  }
}

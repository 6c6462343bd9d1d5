/**
 * The baseline of row 5: a bare node:http server that answers every request
 * with the same JSON body, in its own process like the sandbox. Prints
 * `READY <port>` and runs until killed.
 *
 * Usage: node --import tsx bench/internal/bare-server.ts <body file>
 */
import * as fs from "node:fs"
import * as Http from "node:http"

const body = fs.readFileSync(process.argv[2]!)

const server = Http.createServer((request, response) => {
  request.resume()
  request.once("end", () => {
    response.writeHead(200, { "content-type": "application/json", "content-length": body.length })
    response.end(body)
  })
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  process.stdout.write(`READY ${typeof address === "object" && address !== null ? address.port : 0}\n`)
})

// The baseline of bench row 8 (batch bookkeeping): reads a CSV file and writes one JSON line per row,
// with nothing else: no validation, no fingerprint, no fsync, no display. Plain Node, no dependency.
// Usage: node csv-lines.mjs <input.csv> <output.jsonl>
import * as Fs from "node:fs"
import * as Readline from "node:readline"

const [input, output] = process.argv.slice(2)
const out = Fs.createWriteStream(output)
let header
let number = 0
for await (const line of Readline.createInterface({ input: Fs.createReadStream(input), crlfDelay: Infinity })) {
  number += 1
  if (header === undefined) {
    header = line.split(",")
    continue
  }
  const values = line.split(",")
  const row = { line: number }
  header.forEach((name, index) => (row[name] = values[index]))
  if (!out.write(`${JSON.stringify(row)}\n`)) await new Promise((resolve) => out.once("drain", resolve))
}
await new Promise((resolve) => out.end(resolve))

// Placeholder for root scripts whose package has not landed yet.
const what = process.argv[2] ?? "this command"
console.error(`gcx: \`pnpm ${what}\` is not built yet; it lands with its issue.`)
process.exit(1)

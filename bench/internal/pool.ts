/** A plain async worker pool, for the raw baseline: `count` tasks, at most `concurrency` at a time. */
export const pool = async (
  count: number,
  concurrency: number,
  task: (index: number) => Promise<unknown>
): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < count) {
      const index = next++
      await task(index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
}

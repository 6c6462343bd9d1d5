/** Small statistics over samples: percentiles by linear interpolation, median, mean, and rounding for reports. */

/** The p-th percentile (0 to 100) of the samples, by linear interpolation; NaN when there are none. */
export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (sorted.length - 1)
  const low = Math.floor(rank)
  const high = Math.ceil(rank)
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low)
}

/** The median of the samples. */
export const median = (samples: ReadonlyArray<number>): number => percentile(samples, 50)

/** The arithmetic mean of the samples; NaN when there are none. */
export const mean = (samples: ReadonlyArray<number>): number =>
  samples.length === 0 ? Number.NaN : samples.reduce((sum, value) => sum + value, 0) / samples.length

/** Rounds to a number of decimals, for figures that go into the results file. */
export const round = (value: number, decimals = 2): number => {
  const factor = 10 ** decimals
  return Math.round(value * factor) / factor
}

/** The min, p50, p95, max and mean of the samples, rounded. */
export const summary = (samples: ReadonlyArray<number>, decimals = 1) => ({
  count: samples.length,
  min: round(Math.min(...samples), decimals),
  p50: round(percentile(samples, 50), decimals),
  p95: round(percentile(samples, 95), decimals),
  max: round(Math.max(...samples), decimals),
  mean: round(mean(samples), decimals)
})

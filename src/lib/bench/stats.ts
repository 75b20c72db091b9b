/**
 * Mean and standard deviation as llama-bench reports them: tokens per second of each repetition
 * (all the test's tokens, prompt and generated, over its wall time), their mean and their sample
 * standard deviation (n - 1; 0 for one sample); nanoseconds as integers, truncated as its uint64 are.
 */
export interface SampleStats {
  readonly avgNs: number
  readonly stddevNs: number
  readonly avgTs: number
  readonly stddevTs: number
  readonly samplesNs: readonly number[]
  readonly samplesTs: readonly number[]
}

export function mean(v: readonly number[]): number {
  return v.length === 0 ? 0 : v.reduce((a, b) => a + b, 0) / v.length
}

export function stddev(v: readonly number[]): number {
  if (v.length <= 1) return 0
  const m = mean(v)
  return Math.sqrt(v.reduce((a, x) => a + (x - m) * (x - m), 0) / (v.length - 1))
}

export function sampleStats(samplesNs: readonly number[], tokens: number): SampleStats {
  const samplesTs = samplesNs.map((ns) => (1e9 * tokens) / ns)
  return {
    avgNs: Math.trunc(mean(samplesNs)),
    stddevNs: Math.trunc(stddev(samplesNs)),
    avgTs: mean(samplesTs),
    stddevTs: stddev(samplesTs),
    samplesNs,
    samplesTs,
  }
}

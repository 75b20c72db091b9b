/**
 * `runner bench` as one library call: run the tests, print each result on stdout in the chosen
 * format as it comes, progress on stderr. With --progress every phase gets a line (llama-bench's
 * --progress); without it, a line per test when stderr is a terminal, and nothing when it is not
 * (a script reading stderr gets only errors).
 */
import {amxStatus, cpuFeatures, describeKernels, kernelSet, loadAddon} from '../engine/index.js'
import type {BenchCliOptions} from './flags.js'
import {cpuModel} from './host.js'
import {type BenchEvent, type BenchPhase, type BenchResult, runBench} from './measure.js'
import type {BenchHost} from './record.js'
import {testName} from './tests.js'
import {BENCH_WRITERS, type WriterContext} from './writers.js'

export interface BenchStreams {
  readonly stdout: {write(text: string): unknown}
  readonly stderr: {write(text: string): unknown; readonly isTTY?: boolean}
}

const PHASE_TEXT: Record<BenchPhase, (e: BenchEvent) => string> = {
  start: (e) => `${testName(e.test)}, ${e.test.threads} thread${e.test.threads === 1 ? '' : 's'}`,
  'warmup prompt': () => 'warmup prompt run',
  'warmup generation': () => 'warmup generation run',
  depth: (e) => `depth run (${e.test.nDepth} tokens)`,
  prompt: (e) => `prompt run ${e.rep}`,
  generation: (e) => `generation run ${e.rep}`,
}

export function benchHost(): BenchHost {
  return {cpuInfo: cpuModel(), kernels: describeKernels(kernelSet(cpuFeatures(), amxStatus().state)), runnerVersion: loadAddon().version()}
}

export async function runBenchCli(
  modelPath: string,
  o: BenchCliOptions,
  io: BenchStreams,
  extra: {signal?: AbortSignal; onLoadProgress?: (done: number, total: number) => void} = {},
): Promise<BenchResult[]> {
  const writer = BENCH_WRITERS[o.output]
  const host = benchHost()
  let context: WriterContext | undefined
  let rows = 0
  const lineFor = (e: BenchEvent) =>
    o.progress || (e.phase === 'start' && io.stderr.isTTY)
      ? io.stderr.write(`runner bench: test ${e.index}/${e.total}: ${PHASE_TEXT[e.phase](e)}\n`)
      : undefined
  try {
    return await runBench({
      modelPath,
      params: o.params,
      ...(o.signature ? {signature: o.signature} : {}),
      signal: extra.signal,
      onLoadProgress: extra.onLoadProgress,
      onStart: (model) => {
        context = {host, model, params: o.params}
        io.stdout.write(writer.header(context))
      },
      onEvent: lineFor,
      onResult: (r) => io.stdout.write(writer.row(context!, r, rows++)),
    })
  } finally {
    // Also after Ctrl+C or a failure: what was measured stays a whole document.
    if (context) io.stdout.write(writer.footer(context))
  }
}

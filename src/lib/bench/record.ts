/**
 * One result as a row of llama-bench's csv/json/jsonl output: its field names, in its order
 * (tools/llama-bench/README.md, "Output formats"), for the fields that apply to this engine.
 * Left out, not faked: build_commit and build_number (runner has no commit in its build; its
 * version is runner_version), gpu_info, n_ubatch (the engine's batch is one forward step: n_batch),
 * n_gpu_layers, split_mode, main_gpu, tensor_split and the other device fields, cpu_mask,
 * cpu_strict, poll, flash_attn (runner has one attention path), embeddings and the fit fields.
 * Added after them: runner_version, kernels (the kernel set, as `runner run` prints it) and n_ctx
 * (the context each test got: n_depth + n_prompt + n_gen, as llama-bench sizes it).
 */
import type {BenchResult} from './measure.js'
import type {BenchModelInfo} from './model-info.js'
import {sampleStats} from './stats.js'

export interface BenchHost {
  readonly cpuInfo: string
  readonly kernels: string
  readonly runnerVersion: string
}

export type BenchRecord = Record<string, string | number | boolean | readonly number[]>

/** Fields of every format, in order; csv stops before the samples, as llama-bench's does. */
export const RECORD_FIELDS = [
  'cpu_info',
  'backends',
  'model_filename',
  'model_type',
  'model_size',
  'model_n_params',
  'n_batch',
  'n_threads',
  'type_k',
  'type_v',
  'use_mmap',
  'n_prompt',
  'n_gen',
  'n_depth',
  'test_time',
  'avg_ns',
  'stddev_ns',
  'avg_ts',
  'stddev_ts',
  'samples_ns',
  'samples_ts',
  'runner_version',
  'kernels',
  'n_ctx',
] as const

/** The array fields, which only the JSON formats carry. */
export const SAMPLE_FIELDS: ReadonlySet<string> = new Set(['samples_ns', 'samples_ts'])

export function benchRecord(host: BenchHost, model: BenchModelInfo, r: BenchResult): BenchRecord {
  const t = r.test
  const s = sampleStats(r.samplesNs, t.nPrompt + t.nGen)
  const record: Record<(typeof RECORD_FIELDS)[number], string | number | boolean | readonly number[]> = {
    cpu_info: host.cpuInfo,
    backends: 'CPU',
    model_filename: model.filename,
    model_type: model.type,
    model_size: model.sizeBytes,
    model_n_params: model.nParams,
    n_batch: t.nBatch,
    n_threads: t.threads,
    // One KV type for keys and values (--kv-type).
    type_k: t.kvType,
    type_v: t.kvType,
    // Weights are always mapped in place, never copied.
    use_mmap: true,
    n_prompt: t.nPrompt,
    n_gen: t.nGen,
    n_depth: t.nDepth,
    test_time: r.testTime,
    avg_ns: s.avgNs,
    stddev_ns: s.stddevNs,
    avg_ts: s.avgTs,
    stddev_ts: s.stddevTs,
    samples_ns: s.samplesNs,
    samples_ts: s.samplesTs,
    runner_version: host.runnerVersion,
    kernels: host.kernels,
    n_ctx: r.nCtx,
  }
  return record
}

/**
 * `runner bench`'s parts held to llama-bench's own conventions (llama.cpp's tools/llama-bench, the
 * release node-llama-cpp bundles): the order of its test instances (llama-bench.cpp
 * get_cmd_params_instances), its test names (print_test: "pp%d", "tg%d", "pp%d+tg%d", " @ d%d"),
 * its statistics (the JSON example of its README, whose samples give its avg/stddev figures), its
 * csv/json field names (the CSV header of its README), and the flag refusals, naming the flag as typed.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'
import {benchOptionsFromFlags, type BenchFlagValues, typedFlag} from '../../../src/lib/bench/flags.js'
import {type BenchResult, runBench} from '../../../src/lib/bench/measure.js'
import type {BenchModelInfo} from '../../../src/lib/bench/model-info.js'
import {RECORD_FIELDS, SAMPLE_FIELDS} from '../../../src/lib/bench/record.js'
import {sampleStats} from '../../../src/lib/bench/stats.js'
import {type BenchParams, contextFor, expandTests, testName} from '../../../src/lib/bench/tests.js'
import {BENCH_WRITERS, type WriterContext} from '../../../src/lib/bench/writers.js'
import {RunnerError} from '../../../src/lib/errors.js'

/** llama-bench's CSV header, verbatim from tools/llama-bench/README.md ("CSV"). */
const LLAMA_BENCH_CSV_HEADER =
  'build_commit,build_number,cpu_info,gpu_info,backends,model_filename,model_type,model_size,model_n_params,n_batch,n_ubatch,n_threads,cpu_mask,cpu_strict,poll,type_k,type_v,n_gpu_layers,n_cpu_moe,split_mode,main_gpu,no_kv_offload,flash_attn,devices,tensor_split,tensor_buft_overrides,use_mmap,use_direct_io,embeddings,no_op_offload,no_host,fit_target,fit_min_ctx,n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts'
/** The fields its JSON adds (README, "JSON"). */
const LLAMA_BENCH_JSON_EXTRA = ['samples_ns', 'samples_ts']
/** Ours, beyond llama-bench's (record.ts says why). */
const RUNNER_FIELDS = ['runner_version', 'kernels', 'n_ctx']

const PARAMS: BenchParams = {
  nPrompt: [512],
  nGen: [128],
  pg: [],
  nDepth: [0],
  nBatch: [512],
  kvType: ['f16'],
  threads: [2],
  repetitions: 5,
  warmup: true,
}

describe('the tests a bench runs', () => {
  test("the cross product in llama-bench's order: batch, KV type, threads, depth outside; pp, then tg, then pg inside; 0 means none", () => {
    const tests = expandTests({...PARAMS, nPrompt: [16, 0, 32], nGen: [8], pg: [[4, 2]], threads: [1, 2], nDepth: [0, 64]})
    const perThreads = ['pp16', 'pp32', 'tg8', 'pp4+tg2', 'pp16 @ d64', 'pp32 @ d64', 'tg8 @ d64', 'pp4+tg2 @ d64']
    assert.deepEqual(
      tests.map((t) => `t${t.threads} ${testName(t)}`),
      [1, 2].flatMap((t) => perThreads.map((n) => `t${t} ${n}`)),
    )
    const outer = expandTests({...PARAMS, nGen: [0], nBatch: [8, 16], kvType: ['f16', 'f32'], threads: [1, 2]})
    assert.deepEqual(
      outer.map((t) => `b${t.nBatch} ${t.kvType} t${t.threads}`),
      ['b8 f16 t1', 'b8 f16 t2', 'b8 f32 t1', 'b8 f32 t2', 'b16 f16 t1', 'b16 f16 t2', 'b16 f32 t1', 'b16 f32 t2'],
    )
  })

  test("test names are llama-bench's: pp512, tg128, pp512+tg128, ' @ d512' at a depth", () => {
    const t = {nBatch: 512, kvType: 'f16', threads: 1} as const
    assert.equal(testName({...t, nPrompt: 512, nGen: 0, nDepth: 0}), 'pp512')
    assert.equal(testName({...t, nPrompt: 0, nGen: 128, nDepth: 0}), 'tg128')
    assert.equal(testName({...t, nPrompt: 512, nGen: 128, nDepth: 0}), 'pp512+tg128')
    assert.equal(testName({...t, nPrompt: 512, nGen: 0, nDepth: 512}), 'pp512 @ d512')
    assert.equal(testName({...t, nPrompt: 0, nGen: 128, nDepth: 512}), 'tg128 @ d512')
    // llama-bench sizes the context n_prompt + n_gen + n_depth
    assert.equal(contextFor({...t, nPrompt: 512, nGen: 128, nDepth: 512}), 1152)
  })
})

describe('statistics', () => {
  test("the README's JSON example: its samples_ns give its avg_ns, stddev_ns, avg_ts, stddev_ts and samples_ts", () => {
    // llama-bench README, "JSON", the pp512 entry.
    const s = sampleStats([74601900, 71632900, 71745200, 71952700, 70745500], 512)
    assert.equal(s.avgNs, 72135640)
    assert.equal(s.stddevNs, 1453752)
    assert.equal(s.avgTs.toFixed(6), '7100.002165')
    assert.equal(s.stddevTs.toFixed(6), '140.341520')
    assert.deepEqual(
      s.samplesTs.map((x) => Number(x.toPrecision(6))),
      [6863.1, 7147.55, 7136.37, 7115.79, 7237.21],
    )
    assert.equal(sampleStats([1e9], 10).stddevTs, 0, 'one sample: stddev 0, as llama-bench')
  })
})

describe('flags', () => {
  const parse = (flags: Partial<BenchFlagValues>, argv: string[] = []) =>
    benchOptionsFromFlags({json: false, progress: false, 'no-warmup': false, ...flags}, argv)
  const refused = (flags: Partial<BenchFlagValues>, argv: string[], pattern: RegExp) =>
    assert.throws(
      () => parse(flags, argv),
      (e: unknown) => e instanceof RunnerError && e.code === 'BENCH_BAD_VALUE' && e.exitCode === 2 && pattern.test(e.message),
    )

  test("llama-bench's defaults: -p 512, -n 128, -d 0, -r 5, a warm-up, md", () => {
    const o = parse({})
    assert.deepEqual(
      [o.params.nPrompt, o.params.nGen, o.params.nDepth, o.params.repetitions, o.params.warmup, o.output],
      [[512], [128], [0], 5, true, 'md'],
    )
  })

  test('comma lists and repeated flags add up; --json is -o json; --no-warmup', () => {
    const o = parse({'n-prompt': ['512,1024', '2048'], threads: ['1,2'], pg: ['512,128', '64,16'], json: true, 'no-warmup': true})
    assert.deepEqual(o.params.nPrompt, [512, 1024, 2048])
    assert.deepEqual(o.params.threads, [1, 2])
    assert.deepEqual(o.params.pg, [
      [512, 128],
      [64, 16],
    ])
    assert.equal(o.output, 'json')
    assert.equal(o.params.warmup, false)
  })

  test('bad values are refused naming the flag as typed', () => {
    refused({threads: ['abc']}, ['-t', 'abc'], /^-t "abc": must be an integer/)
    refused({threads: ['abc']}, ['--threads=abc'], /^--threads "abc"/)
    refused({'n-prompt': ['512,,1024']}, ['-p', '512,,1024'], /^-p "512,,1024": has an empty item/)
    refused({'n-gen': ['']}, ['-n', ''], /^-n "": has an empty item/)
    refused({repetitions: '0'}, ['-r', '0'], /^-r "0": must be an integer from 1/)
    refused({'n-prompt': ['-1']}, ['-p', '-1'], /^-p "-1"/)
    refused({'n-depth': ['1.5']}, ['-d', '1.5'], /^-d "1.5"/)
    refused({'batch-size': ['0']}, ['-b', '0'], /^-b "0": must be an integer from 1/)
    refused({pg: ['512']}, ['--pg', '512'], /^--pg "512": must be two lengths/)
    refused({pg: ['512,0']}, ['--pg', '512,0'], /^--pg "0"/)
    refused({output: 'sql'}, ['-o', 'sql'], /^-o "sql": must be one of md, csv, json, jsonl/)
    refused({'kv-type': ['q8_0']}, ['--kv-type', 'q8_0'], /^--kv-type "q8_0": must be f16 or f32/)
    refused({json: true, output: 'csv'}, ['--json', '-o', 'csv'], /^--json is -o json, so -o csv/)
    // oclif reads llama-bench's `-pg 512,128` as -p "g512,128"
    refused({'n-prompt': ['g512,128']}, ['-pg', '512,128'], /llama-bench's -pg is written --pg/)
  })

  test('typedFlag: the spelling on the command line, both when both are, either when neither is (an environment variable)', () => {
    assert.equal(typedFlag(['-t', '2'], 'threads', 't'), '-t')
    assert.equal(typedFlag(['-t2'], 'threads', 't'), '-t')
    assert.equal(typedFlag(['--threads', '2'], 'threads', 't'), '--threads')
    assert.equal(typedFlag(['-t', '1', '--threads', '2'], 'threads', 't'), '-t/--threads')
    assert.equal(typedFlag([], 'threads', 't'), '-t/--threads')
    assert.equal(typedFlag([], 'pg'), '--pg')
  })
})

describe('writers', () => {
  const model: BenchModelInfo = {
    filename: 'm.gguf',
    type: 'llama F32\u001b[31m',
    sizeBytes: 3 * 2 ** 20,
    nParams: 1_500_000,
    nCtxTrain: 2048,
  }
  const context: WriterContext = {host: {cpuInfo: 'CPU "X"', kernels: 'scalar', runnerVersion: '0.0.0'}, model, params: PARAMS}
  const t = {nBatch: 512, kvType: 'f16', threads: 2, nDepth: 0} as const
  const results: BenchResult[] = [
    {test: {...t, nPrompt: 512, nGen: 0}, nCtx: 512, testTime: '2026-01-01T00:00:00Z', samplesNs: [1e9, 1e9]},
    {test: {...t, nPrompt: 0, nGen: 128, nDepth: 512}, nCtx: 640, testTime: '2026-01-01T00:00:01Z', samplesNs: [1e9, 2e9]},
  ]
  const write = (format: keyof typeof BENCH_WRITERS) => {
    const w = BENCH_WRITERS[format]
    return w.header(context) + results.map((r, i) => w.row(context, r, i)).join('') + w.footer(context)
  }

  test("every field is llama-bench's (its README's CSV header and JSON samples, in its order) or one of runner's own", () => {
    const theirs = LLAMA_BENCH_CSV_HEADER.split(',')
    const ours = RECORD_FIELDS.filter((f) => !RUNNER_FIELDS.includes(f) && !SAMPLE_FIELDS.has(f))
    for (const f of ours) assert.ok(theirs.includes(f), `${f} is a llama-bench field`)
    assert.deepEqual(
      ours,
      theirs.filter((f) => ours.includes(f as (typeof ours)[number])),
      "in llama-bench's order",
    )
    for (const f of [
      'cpu_info',
      'model_filename',
      'model_type',
      'model_size',
      'model_n_params',
      'n_batch',
      'n_threads',
      'type_k',
      'n_prompt',
      'n_gen',
      'n_depth',
      'test_time',
      'avg_ns',
      'stddev_ns',
      'avg_ts',
      'stddev_ts',
    ])
      assert.ok(ours.includes(f as (typeof ours)[number]), `has ${f}`)
    assert.deepEqual([...SAMPLE_FIELDS], LLAMA_BENCH_JSON_EXTRA)
  })

  test('csv: a header row, then one row per result, every value quoted (quotes doubled), no samples', () => {
    const lines = write('csv').trimEnd().split('\n')
    const header = lines[0]!.split(',')
    assert.deepEqual(
      header,
      RECORD_FIELDS.filter((f) => !SAMPLE_FIELDS.has(f)),
    )
    assert.equal(lines.length, 1 + results.length)
    const row = lines[1]!.match(/"(?:[^"]|"")*"/g)!.map((c) => c.slice(1, -1).replaceAll('""', '"'))
    assert.equal(row.length, header.length)
    const get = (f: string) => row[header.indexOf(f)]
    assert.equal(get('cpu_info'), 'CPU "X"')
    assert.equal(get('model_type'), 'llama F32\\x1B[31m', 'the escape from the file is printed escaped')
    assert.equal(get('avg_ts'), '512')
    const second = lines[2]!.match(/"(?:[^"]|"")*"/g)!.map((c) => c.slice(1, -1))
    assert.equal(second[header.indexOf('stddev_ts')], '45.254834', "6 decimals, as llama-bench's csv (std::to_string)")
    assert.equal(get('n_prompt'), '512')
  })

  test('json: an array of one object per result, with the samples; jsonl: one object per line', () => {
    const arr = JSON.parse(write('json')) as Array<Record<string, unknown>>
    assert.equal(arr.length, 2)
    assert.deepEqual(Object.keys(arr[0]!), [...RECORD_FIELDS])
    assert.deepEqual(arr[1]!.samples_ns, [1e9, 2e9])
    assert.deepEqual(arr[1]!.samples_ts, [128, 64])
    assert.equal(arr[1]!.avg_ts, 96)
    assert.equal(arr[1]!.n_depth, 512)
    assert.equal(arr[0]!.model_type, 'llama F32\u001b[31m', 'JSON escapes it and parses back to the bytes')
    const lines = write('jsonl').trimEnd().split('\n')
    assert.deepEqual(
      lines.map((l) => JSON.parse(l) as Record<string, unknown>),
      arr,
    )
    assert.deepEqual(
      JSON.parse(BENCH_WRITERS.json.header(context) + BENCH_WRITERS.json.footer(context)),
      [],
      'no result (Ctrl+C at once): still JSON',
    )
  })

  test("md: llama-bench's columns, test names and 'mean ± stddev'; n_batch and type_k columns only off their defaults", () => {
    const lines = write('md').split('\n')
    const cells = (l: string) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim())
    assert.deepEqual(cells(lines[0]!), ['model', 'size', 'params', 'backend', 'threads', 'test', 't/s'])
    assert.match(lines[1]!, /^\| -+ \| -+: \| -+: \| -+ \| -+: \| -+: \| -+: \|$/)
    assert.deepEqual(cells(lines[2]!), ['llama F32\\x1B[31m', '3.00 MiB', '1.50 M', 'CPU', '2', 'pp512', '512.00 ± 0.00'])
    assert.deepEqual(cells(lines[3]!).slice(5), ['tg128 @ d512', '96.00 ± 45.25'])
    assert.match(lines.at(-2)!, /^build: runner 0\.0\.0 \(kernels: scalar\)$/)
    const wide = {...context, params: {...PARAMS, nBatch: [256], kvType: ['f16', 'f32'] as const}}
    assert.deepEqual(cells(BENCH_WRITERS.md.header(wide).split('\n')[0]!), [
      'model',
      'size',
      'params',
      'backend',
      'threads',
      'n_batch',
      'type_k',
      'type_v',
      'test',
      't/s',
    ])
  })
})

describe('refusals before anything loads', () => {
  const refused = (params: Partial<BenchParams>, modelPath: string, code: string, pattern: RegExp) =>
    assert.rejects(
      runBench({modelPath, params: {...PARAMS, ...params}}),
      (e: unknown) => e instanceof RunnerError && e.code === code && e.exitCode === 2 && pattern.test(e.message),
    )

  test('no test left (-p 0 -n 0, no --pg) is refused, naming the flags', () =>
    refused({nPrompt: [0], nGen: [0]}, '/nonexistent.gguf', 'BENCH_NO_TESTS', /-p and -n are all 0 and there is no --pg/))

  test(
    "a test beyond the model's trained context (stories260K: 2048) is refused, naming the test and its numbers",
    {skip: hasShared() ? false : NO_SHARED_REASON},
    () =>
      refused(
        {nPrompt: [64], nGen: [0], nDepth: [0, 2000]},
        sharedPath('models/stories260K.gguf'),
        'BENCH_CONTEXT',
        /^test pp64 @ d2000 needs 2064 positions \(-d 2000 \+ -p 64 \+ -n 0\), more than the 2048 the model was trained on/,
      ),
  )
})

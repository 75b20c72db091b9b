// `runner inspect` end to end: the compiled CLI is spawned and its output is checked against anchors we
// did not compute ourselves:
//   - shared/reference/*.json `model` (architecture, name, n_vocab, train_context_size) written by llama.cpp,
//   - the fixture table of shared/reference/README.md (n_embd, layers, heads/kv, tensor types, bytes),
//   - node-llama-cpp's own GGUF parser (readGgufFileInfo) for tensors and metadata,
//   - node-llama-cpp's llama.cpp loading and generating from a split model we wrote,
//   - the file system (real file sizes) and ggml's block sizes (a spec fact).
// Build first (`npx tsc -p .`): the CLI runs from dist/.
import assert from 'node:assert/strict'
import {copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync} from 'node:fs'
import {availableParallelism, tmpdir} from 'node:os'
import {basename, join, relative} from 'node:path'
import {after, before, describe, test, type TestContext} from 'node:test'

import {GgmlType, getLlama, type Llama, LlamaLogLevel, readGgufFileInfo} from 'node-llama-cpp'

import {GgufValueType, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'
import {writeTwoShards} from '../helpers/split-model.js'
import {type CliResult, hasShared, NO_SHARED_REASON, runCli, runCliAsync, SHARED_DIR, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

/** Skip the test (with a printed reason) when the shared data is absent; returns true when it may run. */
function needShared(t: TestContext): boolean {
  if (hasShared()) return true
  t.skip(NO_SHARED_REASON)
  return false
}

// ---------------------------------------------------------------------------------------------------------
// Anchors

interface ReferenceModel {
  file: string
  sha256: string
  architecture: string
  name: string
  n_vocab: number
  train_context_size: number
}

function referenceModel(ggufPath: string): ReferenceModel {
  const json = JSON.parse(readFileSync(sharedPath('reference', `${basename(ggufPath, '.gguf')}.json`), 'utf8')) as {model: ReferenceModel}
  return json.model
}

/** One row of the fixture table in shared/reference/README.md, keyed by header. */
type ReadmeRow = Record<string, string>

/** The fixture table of reference/README.md (`| file | arch | n_embd | ...`), by file path (`shared/...`). */
function readmeFixtureTable(): Map<string, ReadmeRow> {
  const lines = readFileSync(sharedPath('reference', 'README.md'), 'utf8').split('\n')
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((c) => c.trim())
  const start = lines.findIndex((l) => /^\|\s*file\s*\|\s*arch\s*\|/.test(l))
  assert.ok(start >= 0, 'reference/README.md has no "| file | arch | ..." table')
  const header = cells(lines[start]!)
  const rows = new Map<string, ReadmeRow>()
  for (const line of lines.slice(start + 2)) {
    if (!line.trim().startsWith('|')) break
    const c = cells(line)
    rows.set(c[0]!, Object.fromEntries(header.map((h, i) => [h, c[i] ?? ''])))
  }
  assert.ok(rows.size > 0, 'reference/README.md fixture table is empty')
  return rows
}

/** `shared/fixtures/llama.gguf`: how the README names a file of the shared data. */
function readmeName(path: string): string {
  return `shared/${relative(SHARED_DIR, path).split('\\').join('/')}`
}

/** An integer cell of the README table, or undefined for a blank or non-numeric cell ("(llama.gguf)"). */
function intCell(row: ReadmeRow, column: string): number | undefined {
  const v = row[column]
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined
}

/** ggml's block layout (ggml.c type_traits): [elements per block, bytes per block]. A spec fact, not our code. */
const GGML_BLOCKS: Record<string, [number, number]> = {
  F32: [1, 4],
  F16: [1, 2],
  BF16: [1, 2],
  Q4_0: [32, 18],
  Q4_1: [32, 20],
  Q5_0: [32, 22],
  Q5_1: [32, 24],
  Q8_0: [32, 34],
}

/** A metadata value out of node-llama-cpp's nested object (`llama.context_length` → metadata.llama.context_length). */
function nlcMeta(metadata: unknown, key: string): unknown {
  let v: unknown = metadata
  for (const part of key.split('.')) {
    if (v === null || typeof v !== 'object' || !(part in v)) return undefined
    v = (v as Record<string, unknown>)[part]
  }
  return v
}

type NlcInfo = Awaited<ReturnType<typeof readGgufFileInfo>>

// ---------------------------------------------------------------------------------------------------------
// Our output

interface SummaryJson {
  file: string
  shards: number
  fileBytes: number
  ggufVersion: number
  architecture: string | null
  name: string | null
  parameterCount: number
  contextLength: number | null
  embeddingLength: number | null
  blockCount: number | null
  headCount: number | number[] | null
  headCountKv: number | number[] | null
  vocabSize: number | null
  expertCount: number | null
  expertUsedCount: number | null
  expertFeedForwardLength: number | null
  slidingWindow: number | null
  slidingWindowPattern: number | boolean[] | null
  ropeFreqBaseSwa: number | null
  nextnPredictLayers: number | null
  attnLogitSoftcapping: number | null
  finalLogitSoftcapping: number | null
  tokenizerModel: string | null
  hasChatTemplate: boolean
  tensorCount: number
  bytesByType: Array<{type: string; tensors: number; bytes: number}>
}

interface InspectJson {
  summary: SummaryJson
  metadata: Record<string, unknown>
  metadataTypes: Record<string, string>
  tensors: Array<{name: string; type: string; shape: number[]; offset: number; bytes: number; file?: string}>
}

function parseJson<T>(r: CliResult, what: string): T {
  try {
    return JSON.parse(r.stdout) as T
  } catch (error) {
    assert.fail(`${what}: stdout is not one JSON document (${(error as Error).message}); stderr: ${r.stderr}`)
  }
}

/** `label  value` rows of the summary (formatRows pads the label with two or more spaces). */
function summaryRows(stdout: string): Map<string, string> {
  const rows = new Map<string, string>()
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') break // the summary ends at the first blank line
    const m = /^\s*(\S.*?)\s{2,}(\S.*)$/.exec(line)
    if (m) rows.set(m[1]!, m[2]!) // per-type rows ("  F32  48 tensors, ...") are indented; keyed by the bare type
  }
  return rows
}

/** Run the CLI on several argument lists, a few at a time (spawning node is the slow part). */
async function runMany(argLists: string[][]): Promise<CliResult[]> {
  const results: CliResult[] = new Array(argLists.length)
  let next = 0
  const worker = async () => {
    while (next < argLists.length) {
      const i = next++
      results[i] = await runCliAsync(argLists[i]!)
    }
  }
  await Promise.all(Array.from({length: Math.min(Math.max(2, availableParallelism()), 8)}, worker))
  return results
}

function sameValue(ours: unknown, theirs: unknown): boolean {
  if (typeof theirs === 'bigint') return String(ours) === String(theirs)
  return JSON.stringify(ours) === JSON.stringify(theirs)
}

// ---------------------------------------------------------------------------------------------------------

let tmp = ''
before(() => {
  tmp = mkdtempSync(join(tmpdir(), 'runner-inspect-test-'))
})
after(() => {
  if (tmp) rmSync(tmp, {recursive: true, force: true})
})

describe('runner inspect: family hyperparameters (issue #5)', () => {
  test("experts, sliding windows and soft-caps are rows, with the README fixture table's values", (t) => {
    if (!needShared(t)) return
    const rows = (f: string) => summaryRows(runCli(['inspect', sharedPath('fixtures', `${f}.gguf`)]).stdout)
    assert.equal(rows('qwen3moe').get('experts'), '8, 2 used per token, expert width 96')
    const g2 = rows('gemma2')
    assert.equal(g2.get('sliding window'), '16 tokens')
    assert.equal(g2.get('soft-capping'), 'attention 5, final logits 10')
    assert.equal(rows('gemma3').get('sliding window'), '16 tokens, pattern 2, rope base 10000 there')
    const plain = rows('llama')
    for (const k of ['experts', 'sliding window', 'soft-capping']) assert.equal(plain.has(k), false, `llama has no ${k} row`)
  })
})

describe('runner inspect: summary of stories260K', () => {
  test('prints the summary that llama.cpp and the shared README describe', (t) => {
    if (!needShared(t)) return
    // Outside anchors: reference/README.md's table (n_embd 64, 5 layers, 8/4 heads, 1185376 bytes),
    // reference/stories260K.json (llama, n_vocab 512, train_context_size 2048). Check that the anchors say
    // what the expected values below say, so a silently broken parse cannot make this test vacuous.
    const row = readmeFixtureTable().get('shared/models/stories260K.gguf')
    assert.ok(row, 'reference/README.md has no row for stories260K')
    assert.deepEqual([row['arch'], row['n_embd'], row['layers'], row['heads/kv'], row['bytes']], ['llama', '64', '5', '8/4', '1185376'])
    const ref = referenceModel(STORIES)
    assert.deepEqual([ref.architecture, ref.n_vocab, ref.train_context_size], ['llama', 512, 2048])
    assert.equal(statSync(STORIES).size, 1185376)

    const r = runCli(['inspect', STORIES])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stderr, '')
    const rows = summaryRows(r.stdout)
    assert.equal(rows.get('architecture'), 'llama')
    assert.equal(rows.get('name'), ref.name)
    assert.equal(rows.get('context length'), '2048')
    assert.equal(rows.get('embedding size'), '64')
    assert.equal(rows.get('layers'), '5')
    assert.equal(rows.get('heads'), '8 (4 KV)')
    assert.equal(rows.get('vocab size'), '512')
    assert.equal(rows.get('tensors'), '48')
    assert.equal(rows.get('chat template'), 'no')
    assert.match(rows.get('size') ?? '', /\(1185376 bytes\)/)
    assert.match(rows.get('size') ?? '', /GGUF v3\b/)
  })

  test('the summary agrees with node-llama-cpp on tensors, parameters and tokenizer', async (t) => {
    if (!needShared(t)) return
    const info = await readGgufFileInfo(STORIES, {readTensorInfo: true, logWarnings: false})
    const tensors = info.fullTensorInfo ?? []
    const params = tensors.reduce((n, ti) => n + ti.dimensions.reduce<number>((a, d) => a * Number(d), 1), 0)
    const rows = summaryRows(runCli(['inspect', STORIES]).stdout)
    assert.equal(rows.get('tensors'), String(tensors.length))
    assert.match(rows.get('parameters') ?? '', new RegExp(`\\(${params}\\)$`))
    assert.equal(rows.get('tokenizer'), nlcMeta(info.metadata, 'tokenizer.ggml.model'))
    // README: stories260K's tensor types are "F32" only, so the F32 row holds every tensor at 4 bytes per element.
    assert.match(rows.get('F32') ?? '', new RegExp(`^${tensors.length} tensors, .*\\(${params * 4} bytes\\)$`))
  })
})

describe('runner inspect --json on every shared model', () => {
  test('summary, tensors and metadata agree with llama.cpp, node-llama-cpp and the README', async (t) => {
    if (!needShared(t)) return
    const files = [
      STORIES,
      ...readdirSync(sharedPath('fixtures'))
        .filter((f) => f.endsWith('.gguf'))
        .sort()
        .map((f) => sharedPath('fixtures', f)),
    ]
    assert.ok(files.length >= 2, 'shared/fixtures holds no .gguf file')
    const table = readmeFixtureTable()
    const [results, infos] = await Promise.all([
      runMany(files.map((f) => ['inspect', f, '--json'])),
      Promise.all(files.map((f) => readGgufFileInfo(f, {readTensorInfo: true, logWarnings: false}))),
    ])
    let readmeRowsChecked = 0
    for (const [i, file] of files.entries()) {
      await t.test(basename(file), () => {
        const r = results[i]!
        const info: NlcInfo = infos[i]!
        assert.equal(r.status, 0, r.stderr)
        assert.equal(r.stderr, '')
        const doc = parseJson<InspectJson>(r, `inspect ${file} --json`)
        const s = doc.summary

        // llama.cpp's reference JSON for this model.
        const ref = referenceModel(file)
        assert.equal(s.architecture, ref.architecture, 'architecture vs reference JSON')
        assert.equal(s.name, ref.name, 'name vs reference JSON')
        assert.equal(s.vocabSize, ref.n_vocab, 'vocabSize vs reference n_vocab')
        assert.equal(s.contextLength, ref.train_context_size, 'contextLength vs reference train_context_size')
        assert.equal(s.fileBytes, statSync(file).size, 'fileBytes vs the real file size')
        assert.equal(s.shards, 1)
        assert.equal(s.ggufVersion, info.version, 'GGUF version vs node-llama-cpp')

        // Tensors against node-llama-cpp's independent parser.
        const theirs = info.fullTensorInfo ?? []
        assert.equal(s.tensorCount, theirs.length, 'tensorCount vs node-llama-cpp')
        assert.deepEqual(
          doc.tensors.map((x) => ({name: x.name, type: x.type, shape: x.shape, offset: x.offset})),
          theirs.map((x) => ({name: x.name, type: GgmlType[x.ggmlType], shape: x.dimensions.map(Number), offset: Number(x.fileOffset)})),
          'tensors (name, ggml type, shape in ggml order, absolute offset) vs node-llama-cpp',
        )
        const nElements = (shape: readonly number[]) => shape.reduce((a, d) => a * d, 1)
        assert.equal(
          s.parameterCount,
          theirs.reduce((n, x) => n + nElements(x.dimensions.map(Number)), 0),
          'parameterCount',
        )
        // Sizes: ggml's block sizes, and each tensor fits before the next one (node-llama-cpp's offsets) or the end of file.
        const byOffset = [...doc.tensors].sort((a, b) => a.offset - b.offset)
        for (const [k, x] of byOffset.entries()) {
          const block = GGML_BLOCKS[x.type]
          assert.ok(block, `tensor ${x.name}: type ${x.type} has no block size in this test's table`)
          assert.equal(x.bytes, (nElements(x.shape) / block[0]) * block[1], `tensor ${x.name}: bytes vs ggml block size`)
          const end = k + 1 < byOffset.length ? byOffset[k + 1]!.offset : s.fileBytes
          assert.ok(x.offset + x.bytes <= end, `tensor ${x.name} runs past the next tensor or the end of the file`)
        }
        const typeTotals = new Map<string, {tensors: number; bytes: number}>()
        for (const x of doc.tensors) {
          const e = typeTotals.get(x.type) ?? {tensors: 0, bytes: 0}
          typeTotals.set(x.type, {tensors: e.tensors + 1, bytes: e.bytes + x.bytes})
        }
        assert.deepEqual(
          Object.fromEntries(s.bytesByType.map((b) => [b.type, {tensors: b.tensors, bytes: b.bytes}])),
          Object.fromEntries(typeTotals),
          'bytesByType sums the tensor list',
        )

        // Metadata against node-llama-cpp's metadata object.
        const arch = ref.architecture
        for (const key of [
          'general.architecture',
          'general.name',
          `${arch}.context_length`,
          `${arch}.embedding_length`,
          `${arch}.block_count`,
          `${arch}.attention.head_count`,
          `${arch}.attention.head_count_kv`,
          'tokenizer.ggml.model',
        ]) {
          const expected = nlcMeta(info.metadata, key)
          assert.notEqual(expected, undefined, `node-llama-cpp has no ${key}`)
          assert.ok(
            sameValue(doc.metadata[key], expected),
            `metadata ${key}: ours ${JSON.stringify(doc.metadata[key])}, node-llama-cpp ${String(expected)}`,
          )
        }
        const tokens = nlcMeta(info.metadata, 'tokenizer.ggml.tokens') as string[]
        assert.equal((doc.metadata['tokenizer.ggml.tokens'] as unknown[]).length, tokens.length, 'token count vs node-llama-cpp')
        assert.deepEqual(doc.metadata['tokenizer.ggml.tokens'], tokens, 'tokens vs node-llama-cpp')
        assert.equal(s.vocabSize, tokens.length)
        assert.equal(doc.metadataTypes['tokenizer.ggml.tokens'], 'array<string>')
        assert.equal(s.hasChatTemplate, nlcMeta(info.metadata, 'tokenizer.chat_template') !== undefined, 'hasChatTemplate')
        // Every key node-llama-cpp sees, we list (and the other way round), with equal scalar values.
        const nlcKeys: string[] = []
        const walk = (o: unknown, prefix: string) => {
          for (const [k, v] of Object.entries(o as Record<string, unknown>)) {
            if (v !== null && typeof v === 'object' && !Array.isArray(v)) walk(v, `${prefix}${k}.`)
            else nlcKeys.push(`${prefix}${k}`)
          }
        }
        walk(info.metadata, '')
        assert.deepEqual(Object.keys(doc.metadata).sort(), nlcKeys.sort(), 'metadata keys vs node-llama-cpp')
        for (const key of nlcKeys) {
          const theirsValue = nlcMeta(info.metadata, key)
          const ours = doc.metadata[key]
          if (typeof theirsValue === 'number' && typeof ours === 'number') {
            // f32 values: both sides widen the same float32, so they are equal as doubles.
            assert.equal(ours, theirsValue, `metadata ${key}`)
          } else if (!Array.isArray(theirsValue)) {
            assert.ok(sameValue(ours, theirsValue), `metadata ${key}: ours ${JSON.stringify(ours)}, node-llama-cpp ${String(theirsValue)}`)
          }
        }

        // The README's fixture table (blank or "(llama.gguf)" cells are skipped).
        const row = table.get(readmeName(file))
        if (row) {
          readmeRowsChecked++
          assert.equal(s.architecture, row['arch'], 'architecture vs README')
          const nEmbd = intCell(row, 'n_embd')
          if (nEmbd !== undefined) assert.equal(s.embeddingLength, nEmbd, 'embeddingLength vs README n_embd')
          const layers = intCell(row, 'layers')
          if (layers !== undefined) assert.equal(s.blockCount, layers, 'blockCount vs README layers')
          const heads = /^(\d+)\/(\d+)$/.exec(row['heads/kv'] ?? '')
          if (heads) {
            assert.deepEqual(s.headCount, Number(heads[1]), 'headCount vs README')
            assert.deepEqual(s.headCountKv, Number(heads[2]), 'headCountKv vs README')
          }
          const bytes = intCell(row, 'bytes')
          if (bytes !== undefined) assert.equal(s.fileBytes, bytes, 'fileBytes vs README bytes')
          const types = (row['tensor types'] ?? '')
            .split('+')
            .map((x) => x.trim())
            .filter(Boolean)
          if (types.length > 0) assert.deepEqual(s.bytesByType.map((b) => b.type).sort(), types.sort(), 'tensor types vs README')
          // Family hyperparameters (issue #5) vs the README's "other keys" (key=value cells).
          const family: Record<string, keyof SummaryJson> = {
            sliding_window: 'slidingWindow',
            sliding_window_pattern: 'slidingWindowPattern',
            'rope.freq_base_swa': 'ropeFreqBaseSwa',
            attn_logit_softcapping: 'attnLogitSoftcapping',
            final_logit_softcapping: 'finalLogitSoftcapping',
            expert_count: 'expertCount',
            expert_used_count: 'expertUsedCount',
            expert_feed_forward_length: 'expertFeedForwardLength',
          }
          for (const [, k, v] of (row['other keys'] ?? '').matchAll(/([\w.]+)=([\d.e+]+)/g)) {
            if (family[k!]) assert.equal(s[family[k!]], Number(v), `${family[k!]} vs README ${k}=${v}`)
          }
        }
      })
    }
    assert.ok(readmeRowsChecked >= 2, `only ${readmeRowsChecked} files were found in the README table`)
  })
})

describe('runner inspect --tensors', () => {
  test('lists the 48 tensors of stories260K as node-llama-cpp reads them', async (t) => {
    if (!needShared(t)) return
    const r = runCli(['inspect', STORIES, '--tensors'])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stderr, '')
    const lines = r.stdout.split('\n')
    const headerAt = lines.findIndex((l) => /^name\s+type\s+shape\s+offset\s+bytes$/.test(l))
    assert.ok(headerAt > 0, `no tensor table header in:\n${r.stdout}`)
    // The table ends at the blank line before the verdict ("loads: yes").
    const body = lines.slice(headerAt + 1)
    const end = body.findIndex((l) => l.trim() === '')
    const rows = body.slice(0, end < 0 ? body.length : end).map((l) => {
      const m = /^(\S+)\s+(\S+)\s+\[([\d, ]*)\]\s+(\d+)\s+(\d+)$/.exec(l)
      assert.ok(m, `unparseable tensor row: ${JSON.stringify(l)}`)
      return {name: m[1]!, type: m[2]!, shape: m[3]!.split(',').map((d) => Number(d.trim())), offset: Number(m[4]), bytes: Number(m[5])}
    })
    assert.equal(rows.length, 48)
    const embd = rows.find((x) => x.name === 'token_embd.weight')
    assert.ok(embd, 'no token_embd.weight row')
    assert.equal(embd.type, 'F32')
    assert.deepEqual(embd.shape, [64, 512])
    assert.equal(embd.bytes, 64 * 512 * 4)

    const info = await readGgufFileInfo(STORIES, {readTensorInfo: true, logWarnings: false})
    assert.deepEqual(
      rows.map((x) => ({name: x.name, type: x.type, shape: x.shape, offset: x.offset})),
      (info.fullTensorInfo ?? []).map((x) => ({
        name: x.name,
        type: GgmlType[x.ggmlType],
        shape: x.dimensions.map(Number),
        offset: Number(x.fileOffset),
      })),
    )
  })
})

describe('runner inspect --key', () => {
  test('prints one value and nothing else', (t) => {
    if (!needShared(t)) return
    const ctx = runCli(['inspect', STORIES, '--key', 'llama.context_length'])
    assert.equal(ctx.status, 0, ctx.stderr)
    assert.equal(ctx.stdout, `${referenceModel(STORIES).train_context_size}\n`)
    assert.equal(ctx.stdout, '2048\n')
    assert.equal(ctx.stderr, '')

    const tok = runCli(['inspect', STORIES, '--key', 'tokenizer.ggml.model'])
    assert.equal(tok.status, 0, tok.stderr)
    assert.equal(tok.stdout, 'llama\n')
  })

  test('a missing key exits 1 with META_KEY_NOT_FOUND', (t) => {
    if (!needShared(t)) return
    const r = runCli(['inspect', STORIES, '--key', 'missing.key'])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /\[META_KEY_NOT_FOUND\]/)
    assert.match(r.stderr, /missing\.key/)
    assert.equal(r.stdout, '')
  })

  test('--json prints the key, its GGUF type and its value', (t) => {
    if (!needShared(t)) return
    const r = runCli(['inspect', STORIES, '--key', 'llama.context_length', '--json'])
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(parseJson(r, '--key --json'), {key: 'llama.context_length', type: 'u32', value: 2048})
  })
})

describe('runner inspect refuses what is not a GGUF model', () => {
  const errorCode = (stderr: string) => /\[(GGUF_[A-Z0-9_]+)\]\s*$/.exec(stderr)?.[1]

  test('a truncated file: exit 3, the field and byte offset on stderr, nothing on stdout', (t) => {
    if (!needShared(t)) return
    const file = join(tmp, 'truncated.gguf')
    writeFileSync(file, readFileSync(STORIES).subarray(0, 1000))
    const r = runCli(['inspect', file])
    assert.equal(r.status, 3, r.stderr)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /\[GGUF_[A-Z0-9_]+\]/)
    assert.match(r.stderr, /^runner: .*truncated\.gguf: .+ at byte \d+: .+ \[GGUF_[A-Z0-9_]+\]\n$/)
    const offset = Number(/ at byte (\d+):/.exec(r.stderr)?.[1])
    assert.ok(offset < 1000, `offset ${offset} lies outside the 1000-byte file`)

    const j = runCli(['inspect', file, '--json'])
    assert.equal(j.status, 3)
    const doc = parseJson<{error: {code: string; message: string; field: string; offset: number; file: string}}>(j, 'refusal --json')
    assert.match(doc.error.code, /^GGUF_/)
    assert.equal(doc.error.code, errorCode(j.stderr), 'the JSON code is the one on stderr')
    assert.equal(typeof doc.error.offset, 'number')
    assert.equal(typeof doc.error.field, 'string')
    assert.equal(doc.error.file, file)
    assert.ok(doc.error.message.length > 0)
  })

  test('bad magic: exit 3 with GGUF_BAD_MAGIC at byte 0', (t) => {
    if (!needShared(t)) return
    const file = join(tmp, 'magic.gguf')
    const bytes = Buffer.from(readFileSync(STORIES))
    bytes.write('GGUX', 0, 'latin1')
    writeFileSync(file, bytes)
    const r = runCli(['inspect', file])
    assert.equal(r.status, 3)
    assert.equal(errorCode(r.stderr), 'GGUF_BAD_MAGIC')
    assert.match(r.stderr, / at byte 0:/)
    assert.equal(r.stdout, '')
  })

  test('a path that does not exist: exit 3 with GGUF_NOT_FOUND', () => {
    const r = runCli(['inspect', join(tmpdir(), `runner-no-such-file-${process.pid}.gguf`)])
    assert.equal(r.status, 3)
    assert.equal(errorCode(r.stderr), 'GGUF_NOT_FOUND')
    assert.equal(r.stdout, '')
  })

  test('a directory: exit 3 with GGUF_IO', () => {
    const dir = join(tmp, 'a-directory.gguf')
    mkdirSync(dir, {recursive: true})
    const r = runCli(['inspect', dir])
    assert.equal(r.status, 3)
    assert.equal(errorCode(r.stderr), 'GGUF_IO')
    assert.match(r.stderr, /not a regular file/)
    assert.equal(r.stdout, '')
  })
})

describe('runner inspect on a split model (llama.cpp split convention)', () => {
  let dir = ''
  let shard1 = ''
  let shard2 = ''
  let tensorNames: string[] = []

  before(async () => {
    if (!hasShared()) return
    dir = join(tmp, 'split')
    mkdirSync(dir, {recursive: true})
    shard1 = join(dir, 'stories-00001-of-00002.gguf')
    shard2 = join(dir, 'stories-00002-of-00002.gguf')
    tensorNames = readGgufModel(STORIES).tensors.map((x) => x.name)
    await writeTwoShards(STORIES, shard1, shard2)
  })

  test('inspect on either shard reports the whole model', async (t) => {
    if (!needShared(t)) return
    const total = statSync(shard1).size + statSync(shard2).size
    const [a, b] = await runMany([
      ['inspect', shard1, '--json'],
      ['inspect', shard2, '--json'],
    ])
    const info = await readGgufFileInfo(shard1, {readTensorInfo: true, logWarnings: false})
    const theirs = info.fullTensorInfo ?? []
    assert.deepEqual(
      theirs.map((x) => x.name),
      tensorNames,
      'node-llama-cpp reads all 48 tensors of the split set, in order',
    )
    for (const [label, r] of [
      ['shard 1', a!],
      ['shard 2', b!],
    ] as const) {
      assert.equal(r.status, 0, `${label}: ${r.stderr}`)
      const doc = parseJson<InspectJson>(r, label)
      assert.equal(doc.summary.tensorCount, 48, label)
      assert.equal(doc.summary.shards, 2, label)
      assert.equal(doc.summary.fileBytes, total, `${label}: fileBytes is the sum of the shard sizes`)
      assert.equal(doc.summary.architecture, 'llama', `${label}: metadata comes from the first shard`)
      assert.equal(doc.summary.vocabSize, referenceModel(STORIES).n_vocab, label)
      assert.deepEqual(
        doc.tensors.map((x) => ({name: x.name, offset: x.offset, file: basename(x.file ?? '')})),
        theirs.map((x) => ({name: x.name, offset: Number(x.fileOffset), file: basename(x.filePart === 1 ? shard1 : shard2)})),
        `${label}: tensors, offsets within their shard and shard files vs node-llama-cpp`,
      )
    }
    const text = runCli(['inspect', shard2])
    assert.equal(text.status, 0, text.stderr)
    assert.match(summaryRows(text.stdout).get('file') ?? '', /stories-00001-of-00002\.gguf \(\+1 more shards\)$/)
    assert.match(summaryRows(text.stdout).get('size') ?? '', new RegExp(`\\(${total} bytes\\)`))
  })

  test('llama.cpp (node-llama-cpp) loads the split model and generates what it generates from the original', async (t) => {
    if (!needShared(t)) return
    let llama: Llama
    try {
      llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
    } catch (error) {
      t.skip(`node-llama-cpp has no usable prebuilt binary here: ${(error as Error).message}`)
      return
    }
    const greedy = async (modelPath: string) => {
      const model = await llama.loadModel({modelPath})
      try {
        const ctx = await model.createContext({contextSize: 128, threads: 1})
        try {
          const seq = ctx.getSequence()
          const out: number[] = []
          for await (const token of seq.evaluate(model.tokenize('Once upon a time'), {temperature: 0})) {
            out.push(token)
            if (out.length >= 4) break
          }
          return out
        } finally {
          await ctx.dispose()
        }
      } finally {
        await model.dispose()
      }
    }
    try {
      const fromSplit = await greedy(shard1)
      const fromOriginal = await greedy(STORIES)
      assert.equal(fromOriginal.length, 4)
      assert.deepEqual(fromSplit, fromOriginal)
    } finally {
      await llama.dispose()
    }
  })

  // Inspecting shard 2 when shard 1 is gone: the first shard is read first, and must be named as missing.
  test('a missing first shard is refused with GGUF_SHARD_MISSING', (t) => {
    if (!needShared(t)) return
    const lone = join(dir, 'lone-second')
    mkdirSync(lone, {recursive: true})
    const only = join(lone, basename(shard2))
    copyFileSync(shard2, only)
    const r = runCli(['inspect', only])
    assert.equal(r.status, 3, r.stderr)
    assert.match(r.stderr, /stories-00001-of-00002\.gguf/)
    assert.match(r.stderr, /\[GGUF_SHARD_MISSING\]\n$/)
  })

  test('a missing shard is refused with GGUF_SHARD_MISSING', (t) => {
    if (!needShared(t)) return
    const lone = join(dir, 'lone')
    mkdirSync(lone, {recursive: true})
    const only = join(lone, basename(shard1))
    copyFileSync(shard1, only)
    const r = runCli(['inspect', only])
    assert.equal(r.status, 3, r.stderr)
    assert.match(r.stderr, /\[GGUF_SHARD_MISSING\]\n$/)
    assert.match(r.stderr, /stories-00002-of-00002\.gguf/)
    assert.equal(r.stdout, '')
    unlinkSync(shard2)
    const r2 = runCli(['inspect', shard1, '--json'])
    assert.equal(r2.status, 3)
    assert.equal(parseJson<{error: {code: string}}>(r2, 'shard missing --json').error.code, 'GGUF_SHARD_MISSING')
  })
})

test('a chat template is reported as present (summary and --json)', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'runner-chat-'))
  try {
    const path = join(tmp, 'chat.gguf')
    await writeGguf(path, {
      kvs: [
        {key: 'general.architecture', type: GgufValueType.STRING, value: 'llama'},
        {key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: '{% for m in messages %}{{ m.content }}{% endfor %}'},
      ],
      tensors: [],
    })
    const r = runCli(['inspect', path])
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /^chat template\s+yes$/m)
    const j = JSON.parse(runCli(['inspect', path, '--json']).stdout)
    assert.equal(j.summary.hasChatTemplate, true)
  } finally {
    rmSync(tmp, {recursive: true, force: true})
  }
})

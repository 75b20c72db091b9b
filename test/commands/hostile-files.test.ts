// Hostile model files through the real CLI (issue #18, items 5 and 7).
//
// Each file is ../shared/models/stories260K.gguf written again by our writer with one thing changed
// (or, for what the writer refuses to write, patched at the byte offset our reader reports). The
// outside anchors: the unmodified file loads (llama.cpp loads it too: shared/reference), so each
// refusal comes from the one change; the characters that must not reach a terminal are Unicode's
// own categories (Cc, Cf, Zl, Zp, Cs) by the JavaScript engine's tables, not a list of ours.
//
// What is checked: no byte of a file's strings reaches stdout or stderr as a control, format or
// separator character, in inspect (text, --tensors, --json), run and quantize alike; `inspect`
// shows a file that parses and ends with its verdict ("loads: no — reason"), exiting 3 under
// --check; `quantize` and `remove-sublayer` refuse (and write nothing for) every file `run`
// refuses, with the same code; the reader refuses an empty key and a NUL in a name, at its byte.
// Build first (`npx tsc -p .`): the CLI runs from dist/.
import assert from 'node:assert/strict'
import {existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {
  type GgufKv,
  type GgufModelFiles,
  GgufValueType,
  type GgufWriteTensor,
  readGgufFile,
  readGgufModel,
  writeGguf,
} from '../../src/lib/gguf/index.js'
import {type CliResult, hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON

/** Unicode's classes of what must never reach a terminal as itself (a line feed between lines is the one exception). */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u
/** Clear the screen, set the window title, ring the bell, the one-code-point CSI, a bidi override and isolate, DEL, NUL. */
const HOSTILE = 'x\x1b[2J\x1b]0;pwned\x07\u009b31m\u202eevil\u2066\x7f\0'

const dir = mkdtempSync(join(tmpdir(), 'runner-hostile-files-'))
after(() => rmSync(dir, {recursive: true, force: true}))

let source: GgufModelFiles | undefined
const stories = () => (source ??= readGgufModel(STORIES))

interface Edit {
  readonly kvs?: (kvs: GgufKv[]) => GgufKv[]
  readonly tensors?: (tensors: GgufWriteTensor[]) => GgufWriteTensor[]
}

/** stories260K with one edit, written by our writer (tensor data is copied from the original). */
async function variant(name: string, edit: Edit): Promise<string> {
  const m = stories()
  const kvs = (edit.kvs ?? ((x) => x))([...m.kvs])
  const tensors = (edit.tensors ?? ((x) => x))(
    m.tensors.map((t) => ({name: t.name, type: t.type, shape: [...t.shape], data: {file: t.file, offset: t.offset}})),
  )
  const path = join(dir, `${name}.gguf`)
  await writeGguf(path, {kvs, tensors})
  return path
}

const setKv =
  (key: string, type: GgufValueType, value: GgufKv['value']) =>
  (kvs: GgufKv[]): GgufKv[] =>
    kvs.some((kv) => kv.key === key) ? kvs.map((kv) => (kv.key === key ? {key, type, value} : kv)) : [...kvs, {key, type, value}]
const str = (key: string, value: string) => setKv(key, GgufValueType.STRING, value)
const u32 = (key: string, value: number) => setKv(key, GgufValueType.UINT32, value)

const cli = (...args: string[]) => runCliAsync(args)

/** Nothing a file could put there reaches the terminal: stdout and stderr, line by line. */
function assertPrintable(r: CliResult, what: string): void {
  for (const [stream, text] of [
    ['stdout', r.stdout],
    ['stderr', r.stderr],
  ] as const) {
    for (const line of text.split('\n')) {
      const m = UNSAFE.exec(line)
      assert.ok(!m, `${what}: ${stream} holds U+${m?.[0].codePointAt(0)!.toString(16).toUpperCase()} in ${JSON.stringify(line)}`)
    }
  }
}

/** The refusal line every command prints: `runner: <message> [CODE]`. */
function refusal(r: CliResult, code: string, what: string): string {
  const line = r.stderr.split('\n').find((l) => l.startsWith('runner: '))
  assert.ok(line, `${what}: no refusal on stderr: ${r.stderr}`)
  assert.ok(line.endsWith(` [${code}]`), `${what}: ${line}`)
  return line
}

describe('file strings never reach the terminal raw', {skip: SKIP}, () => {
  test('general.name and a metadata key with escapes: inspect (text, --json, --key) shows them escaped; the file loads', async () => {
    const path = await variant('name', {kvs: (kvs) => str('evil\x1b[31m.key', HOSTILE)(str('general.name', HOSTILE)(kvs))})
    const [text, json, key, keyJson, run] = await Promise.all([
      cli('inspect', path),
      cli('inspect', path, '--json'),
      cli('inspect', path, '--key', 'general.name'),
      cli('inspect', path, '--key', 'general.name', '--json'),
      cli('run', '-m', path, '-p', 'Once upon a time', '-n', '4', '--seed', '1'),
    ])
    for (const [r, what] of [
      [text, 'inspect'],
      [json, 'inspect --json'],
      [key, 'inspect --key'],
      [keyJson, 'inspect --key --json'],
      [run, 'run'],
    ] as const) {
      assert.equal(r.status, 0, `${what}: ${r.stderr}`)
      assertPrintable(r, what)
    }
    const escaped = 'x\\x1B[2J\\x1B]0;pwned\\x07\\x9B31m\\u{202E}evil\\u{2066}\\x7F\\x00'
    assert.match(text.stdout, new RegExp(`^name\\s+${escaped.replace(/[\\[\]{}]/g, '\\$&')}$`, 'm'))
    assert.ok(text.stdout.includes('evil\\x1B[31m.key'), text.stdout)
    assert.match(text.stdout, /\nloads: yes\n$/)
    assert.equal(key.stdout, `${escaped}\n`)
    // JSON escapes them as JSON does, so the values read back exactly.
    const doc = JSON.parse(json.stdout) as {summary: {name: string}; metadata: Record<string, unknown>; loads: {ok: boolean}}
    assert.equal(doc.summary.name, HOSTILE)
    assert.equal(doc.metadata['evil\x1b[31m.key'], HOSTILE)
    assert.deepEqual(doc.loads, {ok: true})
    assert.equal((JSON.parse(keyJson.stdout) as {value: string}).value, HOSTILE)
  })

  test('a tensor name with escapes: inspect --tensors shows it escaped; inspect, run and quantize refuse it by name, escaped', async () => {
    const evil = 't\x1b]0;title\x07\u009b2J'
    // A copy of output_norm.weight under a hostile name.
    const path = await variant('tensor', {tensors: (ts) => [...ts, {...ts.find((t) => t.name === 'output_norm.weight')!, name: evil}]})
    const out = join(dir, 'tensor-q8.gguf')
    const [tensors, check, json, run, runJson, quantize] = await Promise.all([
      cli('inspect', path, '--tensors'),
      cli('inspect', path, '--check'),
      cli('inspect', path, '--json', '--check'),
      cli('run', '-m', path, '-p', 'hi', '-n', '1'),
      cli('run', '-m', path, '-p', 'hi', '-n', '1', '--json'),
      cli('quantize', path, out, '--type', 'Q8_0', '--pure'),
    ])
    for (const [r, what] of [
      [tensors, 'inspect --tensors'],
      [check, 'inspect --check'],
      [json, 'inspect --json --check'],
      [run, 'run'],
      [runJson, 'run --json'],
      [quantize, 'quantize'],
    ] as const)
      assertPrintable(r, what)
    const shown = 't\\x1B]0;title\\x07\\x9B2J'
    assert.equal(tensors.status, 0, tensors.stderr)
    assert.match(tensors.stdout, new RegExp(`^${shown.replace(/[\\[\]]/g, '\\$&')}\\s+F32\\s+\\[`, 'm'))
    assert.equal(check.status, 3, check.stderr)
    assert.ok(
      check.stdout.endsWith(
        `loads: no — tensor ${shown} is not part of the llama architecture as the engine knows it [ARCH_UNKNOWN_TENSOR]\n`,
      ),
    )
    assert.equal(json.status, 3)
    assert.deepEqual((JSON.parse(json.stdout) as {loads: unknown}).loads, {
      ok: false,
      code: 'ARCH_UNKNOWN_TENSOR',
      message: `tensor ${shown} is not part of the llama architecture as the engine knows it`,
    })
    for (const [r, what] of [
      [run, 'run'],
      [runJson, 'run --json'],
      [quantize, 'quantize'],
    ] as const) {
      assert.equal(r.status, 5, `${what}: ${r.stderr}`)
      assert.ok(refusal(r, 'ARCH_UNKNOWN_TENSOR', what).includes(`tensor ${shown} `))
    }
    assert.equal((JSON.parse(runJson.stdout) as {error: {code: string}}).error.code, 'ARCH_UNKNOWN_TENSOR')
    assert.ok(!existsSync(out), 'quantize wrote a file run refuses')
  })
})

/** A file that parses but that run refuses, and what every command must say about it. */
interface Unloadable {
  readonly name: string
  readonly edit: Edit
  readonly code: string
  readonly exit: number
  /** What the refusal must name (the key or tensor, and the bad value). */
  readonly mentions: readonly string[]
}

const UNLOADABLE: readonly Unloadable[] = [
  {
    name: 'head_count 0',
    edit: {kvs: u32('llama.attention.head_count', 0)},
    code: 'GGUF_META_RANGE',
    exit: 3,
    mentions: ['llama.attention.head_count', '0 is outside'],
  },
  {
    name: 'a missing tensor',
    edit: {tensors: (ts) => ts.filter((t) => t.name !== 'blk.3.ffn_down.weight')},
    code: 'ARCH_MISSING_TENSOR',
    exit: 3,
    mentions: ['blk.3.ffn_down.weight'],
  },
  {
    name: 'a vocabulary mismatch',
    edit: {kvs: u32('llama.vocab_size', 600)},
    code: 'ARCH_BAD_VOCAB',
    exit: 3,
    mentions: ['llama.vocab_size 600', '512'],
  },
  {
    name: 'an unknown architecture with escapes in its name',
    edit: {kvs: str('general.architecture', 'l\x1b[2Jama\u202e')},
    code: 'ARCH_UNSUPPORTED',
    exit: 5,
    mentions: ['general.architecture "l\\x1B[2Jama\\u{202E}"'],
  },
  {
    // planModel accepts it; only the tokenizer refuses: the model check is more than the plan.
    name: 'a special token outside the vocabulary',
    edit: {kvs: u32('tokenizer.ggml.bos_token_id', 512)},
    code: 'TOKENIZER_BAD_SPECIAL_TOKEN',
    exit: 3,
    mentions: ['tokenizer.ggml.bos_token_id', '512'],
  },
]

describe('one model check: inspect, run, quantize and remove-sublayer agree on what loads', {skip: SKIP}, () => {
  test('the unmodified file loads: inspect says so and --check exits 0', async () => {
    const path = await variant('unmodified', {})
    const r = await cli('inspect', path, '--check')
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /\n\nloads: yes\n$/)
  })

  for (const c of UNLOADABLE) {
    test(c.name, async () => {
      const path = await variant(c.name.replace(/\W+/g, '-'), c.edit)
      const out = join(dir, `${c.name.replace(/\W+/g, '-')}-out.gguf`)
      const cut = join(dir, `${c.name.replace(/\W+/g, '-')}-cut.gguf`)
      const [inspect, check, run, quantize, remove] = await Promise.all([
        cli('inspect', path),
        cli('inspect', path, '--check'),
        cli('run', '-m', path, '-p', 'hi', '-n', '1'),
        cli('quantize', path, out, '--type', 'Q8_0', '--pure'),
        cli('remove-sublayer', path, cut, 'attn:1'),
      ])
      for (const [r, what] of [
        [inspect, 'inspect'],
        [check, 'inspect --check'],
        [run, 'run'],
        [quantize, 'quantize'],
        [remove, 'remove-sublayer'],
      ] as const)
        assertPrintable(r, what)
      // inspect shows the file anyway, and ends with the verdict.
      assert.equal(inspect.status, 0, inspect.stderr)
      assert.match(inspect.stdout, /^file\s/)
      const verdict = inspect.stdout.trimEnd().split('\n').at(-1)!
      assert.ok(verdict.startsWith('loads: no — ') && verdict.endsWith(` [${c.code}]`), verdict)
      for (const m of c.mentions) assert.ok(verdict.includes(m), `inspect verdict lacks ${m}: ${verdict}`)
      assert.equal(check.status, 3, check.stderr)
      // run refuses it; quantize and remove-sublayer refuse it the same way and write nothing.
      for (const [r, what] of [
        [run, 'run'],
        [quantize, 'quantize'],
      ] as const) {
        assert.equal(r.status, c.exit, `${what}: ${r.stderr}`)
        const line = refusal(r, c.code, what)
        for (const m of c.mentions) assert.ok(line.includes(m), `${what} lacks ${m}: ${line}`)
      }
      assert.equal(remove.status, c.exit, remove.stderr)
      refusal(remove, c.code, 'remove-sublayer')
      assert.ok(!existsSync(out), 'quantize wrote a file run refuses')
      assert.ok(!existsSync(cut), 'remove-sublayer wrote a file run refuses')
    })
  }
})

describe('the reader refuses an empty key and a NUL in a name, at its byte offset', {skip: SKIP}, () => {
  /** A file our writer will not write, patched from one it will: returns the path and the offset the refusal must name. */
  async function patched(
    name: string,
    extraKey: string,
    patch: (b: Buffer, at: (key: string) => number, tensorAt: (n: string) => number) => number,
  ) {
    const base = await variant(`${name}-base`, {kvs: (kvs) => [...kvs, {key: extraKey, type: GgufValueType.UINT32, value: 1}]})
    const info = readGgufFile(base)
    const bytes = readFileSync(base)
    const offset = patch(
      bytes,
      (key) => info.kvOffsets.get(key)!,
      (n) => info.tensors.find((t) => t.name === n)!.infoOffset,
    )
    const path = join(dir, `${name}.gguf`)
    writeFileSync(path, bytes)
    return {path, offset}
  }

  const cases = [
    {
      name: 'a key of length zero',
      code: 'GGUF_BAD_KEY',
      field: /kv\[\d+\]\.key/,
      // The key "k" becomes "" and its byte is read as the start of the value type: refused before that.
      make: () => patched('empty-key', 'k', (b, at) => (b.writeBigUInt64LE(0n, at('k')), at('k'))),
    },
    {
      name: 'a NUL in a key',
      code: 'GGUF_BAD_KEY',
      field: /kv\[\d+\]\.key/,
      make: () => patched('nul-key', 'ab', (b, at) => ((b[at('ab') + 8 + 1] = 0), at('ab') + 9)),
    },
    {
      name: 'a NUL in a tensor name',
      code: 'GGUF_TENSOR_NAME',
      field: /tensor\[\d+\]\.name/,
      make: () =>
        patched(
          'nul-tensor',
          'x',
          (b, _at, tensorAt) => ((b[tensorAt('output_norm.weight') + 8 + 6] = 0), tensorAt('output_norm.weight') + 14),
        ),
    },
  ]
  for (const c of cases) {
    test(c.name, async () => {
      const {path, offset} = await c.make()
      const [inspect, json, run, quantize] = await Promise.all([
        cli('inspect', path),
        cli('inspect', path, '--json'),
        cli('run', '-m', path, '-p', 'hi', '-n', '1'),
        cli('quantize', path, join(dir, 'never.gguf'), '--type', 'Q8_0', '--pure'),
      ])
      for (const [r, what] of [
        [inspect, 'inspect'],
        [json, 'inspect --json'],
        [run, 'run'],
        [quantize, 'quantize'],
      ] as const) {
        assertPrintable(r, what)
        assert.equal(r.status, 3, `${what}: ${r.stderr}`)
        assert.ok(refusal(r, c.code, what).includes(` at byte ${offset}: `), r.stderr)
      }
      const error = (JSON.parse(json.stdout) as {error: {code: string; field: string; offset: number}}).error
      assert.equal(error.code, c.code)
      assert.match(error.field, c.field)
      assert.equal(error.offset, offset)
      assert.ok(!existsSync(join(dir, 'never.gguf')))
    })
  }
})

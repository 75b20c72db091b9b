// The library API as a user meets it (issue #22): `import … from 'runner-llm'` resolved by Node
// through package.json's "exports" (the package's own name, from inside it: the compiled dist/, so
// build first), and every ```ts example of docs/library.md run as written, its output held to
// llama.cpp's records in ../shared/reference/stories260K.json: the greedy tokens after "Once upon a
// time" (greedy[0]) and llama-perplexity's figure on corpus-stories.txt (perplexity, F32 KV cache).
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'
import {promisify} from 'node:util'

import {BUILTIN_TEMPLATES} from '../../src/lib/chat/index.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../helpers/shared.js'

interface Reference {
  greedy: {prompt: string; prompt_ids: number[]; ids: number[]; text: string}[]
  perplexity: {n_scored: number; nll_mean: number; perplexity: number}
}

const SKIP = hasShared() ? false : NO_SHARED_REASON
const run = promisify(execFile)
/** A user's project: node_modules/runner-llm links to this checkout (made in `before`). */
let userDir = ''
const reference = () => JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as Reference

/** The ```ts blocks of docs/library.md, under the heading each follows. */
function examples(): {heading: string; code: string}[] {
  const text = readFileSync(join(REPO_ROOT, 'docs', 'library.md'), 'utf8')
  const out: {heading: string; code: string}[] = []
  let heading = ''
  for (const m of text.matchAll(/^## (.+)$|^```ts\n([\s\S]*?)^```$/gm)) {
    if (m[1] !== undefined) heading = m[1]
    else out.push({heading, code: m[2]!})
  }
  return out
}

/**
 * Run one example as a user's module: a file in a folder whose node_modules/runner-llm links to this
 * checkout (what an install gives), plain node (no tsx), from the repository root (the examples'
 * relative paths).
 */
async function runExample(code: string, index: number): Promise<string> {
  const file = join(userDir, `example-${index}.mjs`)
  writeFileSync(file, code)
  const {stdout} = await run(process.execPath, [file], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: {...process.env, NODE_OPTIONS: ''},
  })
  return stdout
}

/** What each section's example must print, by the section's heading. */
const CHECKS: Record<string, (lines: string[], ref: Reference) => void> = {
  'Load, generate, dispose': ([info, text, tokens], ref) => {
    assert.equal(info, 'llama 2048')
    const want = ref.greedy[0]!
    assert.equal(want.prompt, 'Once upon a time')
    assert.equal(tokens, `${want.ids.slice(0, 8).join(' ')} length`, "llama.cpp's first 8 greedy tokens")
    const got = JSON.parse(text!) as string
    assert.ok(got.length > 0 && want.text.startsWith(got), `${text} begins llama.cpp's text`)
  },
  'Stream, and stop': ([stopped, cut], ref) => {
    const cutAt = ref.greedy[0]!.text.indexOf('Lily') + 'Lily'.length
    assert.ok(cutAt > 4)
    const [text, reason] = stopped!.split(/ (?=\w+$)/)
    const got = JSON.parse(text!) as string
    assert.ok(got.length >= cutAt && ref.greedy[0]!.text.startsWith(got), `${text}: llama.cpp's text through "Lily"`)
    assert.equal(reason, 'stopped')
    assert.equal(cut, 'aborted true')
  },
  'Chat with a template': ([given, own], ref) => {
    const [prompt, text] = splitJsonPair(given!)
    assert.equal(prompt, 'Once upon a time')
    assert.ok(text!.length > 0 && ref.greedy[0]!.text.startsWith(text!), 'the rendered prompt continues as llama.cpp greedy does')
    assert.equal(JSON.parse(own!), '<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n', 'ChatML for a file without a template')
  },
  'Score a text (perplexity)': ([line], ref) => {
    const [n, nll, ppl] = line!.split(' ').map(Number)
    assert.equal(n, ref.perplexity.n_scored)
    assert.ok(Math.abs(nll! - ref.perplexity.nll_mean) <= 1e-4 + 5e-5, `nll_mean ${nll} vs llama.cpp's ${ref.perplexity.nll_mean}`)
    assert.ok(Math.abs(ppl! / ref.perplexity.perplexity - 1) <= 2e-4, `ppl ${ppl} vs llama.cpp's ${ref.perplexity.perplexity}`)
  },
  Embed: ([line]) => {
    const [count, dims, pooling, dot] = line!.split(' ')
    assert.equal(count, '2')
    assert.equal(dims, '64', "stories260K's n_embd")
    assert.equal(pooling, 'mean')
    assert.ok(Math.abs(Number(dot)) <= 1, 'unit vectors: |cosine| <= 1')
  },
  Serve: ([line], ref) => {
    const [status, text] = [line!.slice(0, 3), JSON.parse(line!.slice(4)) as string]
    assert.equal(status, '200')
    assert.ok(text.length > 0 && ref.greedy[0]!.text.startsWith(text), `${text}: llama.cpp's greedy text`)
  },
  'Speculative decoding': ([tokens, draft], ref) => {
    assert.equal(tokens, `${ref.greedy[0]!.ids.slice(0, 8).join(' ')} length`, "llama.cpp's first 8 greedy tokens, with the draft on")
    assert.equal(draft, 'lookup true')
  },
  Errors: ([line]) => assert.match(line!, /^[A-Z_]+ 3$/, 'a missing model file is a RunnerError exiting 3'),
}

/** `"a" "b"` → ['a', 'b']. */
function splitJsonPair(line: string): [string, string] {
  return JSON.parse(`[${line.replace(/" "/, '", "')}]`) as [string, string]
}

// Concurrent: each example is its own process (a model load and a few tokens), so two cores overlap them.
describe('the library API by its package name', {skip: SKIP, concurrency: true}, () => {
  before(() => {
    userDir = mkdtempSync(join(tmpdir(), 'runner-library-'))
    mkdirSync(join(userDir, 'node_modules'))
    symlinkSync(REPO_ROOT, join(userDir, 'node_modules', 'runner-llm'), 'dir')
  })
  after(() => rmSync(userDir, {recursive: true, force: true}))

  test('package.json "exports" resolves `runner-llm` to the compiled entry module and its types', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {name: string; types: string}
    assert.equal(pkg.name, 'runner-llm')
    const resolved = import.meta.resolve('runner-llm')
    assert.equal(resolved, new URL(`file://${join(REPO_ROOT, 'dist', 'src', 'index.js')}`).href)
    assert.ok(readFileSync(join(REPO_ROOT, pkg.types), 'utf8').includes('loadModel'), 'the declarations name loadModel')
    const api = (await import('runner-llm')) as Record<string, unknown>
    for (const name of ['loadModel', 'serve', 'RunnerModel', 'TextStream', 'RunnerError', 'ExitCode'])
      assert.ok(name in api, `runner-llm exports ${name}`)
  })

  test('one model, calls made together: they run in turn (no ENGINE_BUSY), each as if alone; refusals name the option', async () => {
    const {loadModel, RunnerError} = await import('runner-llm')
    const want = reference().greedy[0]!
    const model = await loadModel(sharedPath('models', 'stories260K.gguf'))
    try {
      const greedy = {maxTokens: 8, temperature: 0}
      const [a, vectors, b] = await Promise.all([
        model.generate(want.prompt, greedy),
        model.embed([want.prompt]),
        model.generate(want.prompt, greedy),
      ])
      assert.deepEqual(a.tokens, want.ids.slice(0, 8), "llama.cpp's greedy tokens")
      assert.deepEqual(b.tokens, a.tokens, 'the same after an embedding on the same context')
      // The embedding evaluated the same tokens (BOS + the prompt): the second generation reuses all but the last.
      assert.equal(b.usage.cachedTokens, want.prompt_ids.length - 1, "the embedding's KV rows are reused")
      assert.equal(vectors.embeddings.length, 1)
      const refused = (code: string, text: RegExp) => (e: unknown) => e instanceof RunnerError && e.code === code && text.test(e.message)
      await assert.rejects(model.generate('x', {maxTokens: -1}), refused('LIBRARY_BAD_OPTION', /^maxTokens /))
      await assert.rejects(model.generate('x', {temprature: 0} as object), refused('SAMPLING_BAD_OPTION', /"temprature"/))
      // A built-in template by name renders as that template's text does (llama.cpp's llama3 turn markers), not as the word.
      const hello = [{role: 'user' as const, content: 'Hello'}]
      const byName = await model.chat(hello, {template: 'llama3', maxTokens: 1, temperature: 0})
      const byText = await model.chat(hello, {template: BUILTIN_TEMPLATES.llama3!, maxTokens: 1, temperature: 0})
      assert.equal(byName.prompt, byText.prompt)
      assert.match(byName.prompt, /<\|start_header_id\|>user<\|end_header_id\|>\n\nHello<\|eot_id\|>/)
    } finally {
      const first = model.dispose()
      assert.equal(model.dispose(), first, 'a second dispose waits for the same release')
      await first
    }
    assert.throws(
      () => model.stream('x'),
      (e: unknown) => e instanceof RunnerError && e.code === 'MODEL_DISPOSED',
    )
  })

  const blocks = examples()
  test('docs/library.md has an example under every checked heading, and every example is checked', () => {
    assert.deepEqual(blocks.map((b) => b.heading).sort(), Object.keys(CHECKS).sort())
  })

  blocks.forEach(({heading, code}, i) => {
    test(`docs/library.md "${heading}" runs as written`, async () => {
      const stdout = await runExample(code, i)
      CHECKS[heading]!(stdout.trimEnd().split('\n'), reference())
    })
  })
})

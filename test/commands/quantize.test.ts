/**
 * `runner quantize` against llama.cpp's own quantizer: shared/fixtures/llama-<type>.gguf and
 * stories260K-<type>.gguf are byte-identical to llama_model_quantize's --pure output from the F32
 * files (shared/reference/README.md), so ours must give the same tensor bytes; the result loads and
 * generates in llama.cpp. Plus the refusals.
 */
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {getLlama, LlamaLogLevel} from 'node-llama-cpp'

import {Model} from '../../src/lib/engine/model.js'
import {readGgufModel} from '../../src/lib/gguf/index.js'
import {greedy} from '../helpers/engine.js'
import {tensorBytes} from '../helpers/gguf.js'
import {hasShared, NO_SHARED_REASON, runCli, sharedPath} from '../helpers/shared.js'

describe('runner quantize', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-quantize-'))
  after(() => rmSync(dir, {recursive: true, force: true}))

  const CASES: Array<[string, string, string]> = [
    ['fixtures/llama.gguf', 'Q8_0', 'fixtures/llama-q8_0.gguf'],
    ['fixtures/llama.gguf', 'Q4_0', 'fixtures/llama-q4_0.gguf'],
    ['fixtures/llama.gguf', 'Q4_1', 'fixtures/llama-q4_1.gguf'],
    ['fixtures/llama.gguf', 'Q5_0', 'fixtures/llama-q5_0.gguf'],
    ['fixtures/llama.gguf', 'Q5_1', 'fixtures/llama-q5_1.gguf'],
    ['fixtures/llama.gguf', 'F16', 'fixtures/llama-f16.gguf'],
    ['fixtures/llama.gguf', 'BF16', 'fixtures/llama-bf16.gguf'],
    ['models/stories260K.gguf', 'Q8_0', 'fixtures/stories260K-q8_0.gguf'],
    ['models/stories260K.gguf', 'Q4_0', 'fixtures/stories260K-q4_0.gguf'],
  ]
  for (const [input, type, want] of CASES) {
    test(`${input} → ${type}: every tensor byte-identical to llama.cpp's --pure output (${want})`, () => {
      const out = join(dir, `${type}-${input.replace(/\W/g, '_')}.gguf`)
      const before = createHash('sha256')
        .update(readFileSync(sharedPath(...input.split('/'))))
        .digest('hex')
      const r = runCli(['quantize', sharedPath(...input.split('/')), out, '--type', type, '--pure', '--json'])
      assert.equal(r.status, 0, r.stderr)
      const summary = JSON.parse(r.stdout)
      const ours = readGgufModel(out)
      const theirs = readGgufModel(sharedPath(...want.split('/')))
      assert.deepEqual(
        ours.tensors.map((t) => [t.name, t.type.name, t.shape]),
        theirs.tensors.map((t) => [t.name, t.type.name, t.shape]),
      )
      for (const [i, t] of ours.tensors.entries()) assert.ok(tensorBytes(t).equals(tensorBytes(theirs.tensors[i]!)), `${t.name} differs`)
      assert.equal(ours.metadata.get('general.file_type')!.value, theirs.metadata.get('general.file_type')!.value)
      assert.equal(ours.metadata.get('runner.quantize.type')!.value, type)
      assert.equal(summary.fileBytes, readFileSync(out).length)
      const after = createHash('sha256')
        .update(readFileSync(sharedPath(...input.split('/'))))
        .digest('hex')
      assert.equal(after, before, 'the input is never modified')
    })
  }

  test('our Q4_0 file loads in llama.cpp and both engines produce the same greedy tokens', async () => {
    const out = join(dir, 'Q4_0-models_stories260K_gguf.gguf')
    const prompt = 'Once upon a time'
    const ours = await Model.load(out)
    const ids = ours.tokenizer.encode(prompt, {addSpecial: true})
    const ctx = await ours.createContext({nCtx: 128, threads: 1, kvType: 'f32'})
    const mine = (await ctx.generate(ids, {maxTokens: 24, sampling: greedy(), stopTokens: []}).result).tokens
    ctx.dispose()
    ours.dispose()
    const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
    const model = await llama.loadModel({modelPath: out})
    const lctx = await model.createContext({
      contextSize: 128,
      threads: 1,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
      flashAttention: false,
    })
    const theirs: number[] = []
    for await (const t of lctx.getSequence().evaluate(ids, {temperature: 0})) {
      theirs.push(t)
      if (theirs.length === 24) break
    }
    await lctx.dispose()
    await model.dispose()
    await llama.dispose()
    // Quantized arithmetic may legitimately part after a near tie; the first tokens must agree.
    let same = 0
    while (same < 24 && mine[same] === theirs[same]) same++
    assert.ok(same >= 8, `only ${same} greedy tokens agree: ours ${mine} vs llama.cpp ${theirs}`)
  })

  // One run checks two things (CI time): the tensors a plan names, and the progress on a piped stderr.
  test('--keep-output and a type plan change exactly the tensors they name; piped, progress is a line per 10 % (issue #22)', () => {
    const plan = join(dir, 'plan.json')
    writeFileSync(plan, JSON.stringify({rules: [{pattern: 'blk\\.\\d+\\.ffn_down\\.weight', type: 'Q8_0'}]}))
    const out = join(dir, 'planned.gguf')
    const r = runCli([
      'quantize',
      sharedPath('fixtures', 'llama.gguf'),
      out,
      '--type',
      'Q4_0',
      '--pure',
      '--keep-output',
      '--type-plan',
      plan,
    ])
    assert.equal(r.status, 0, r.stderr)
    for (const t of readGgufModel(out).tensors) {
      const want = t.shape.length === 1 ? 'F32' : t.name === 'output.weight' ? 'F32' : t.name.endsWith('ffn_down.weight') ? 'Q8_0' : 'Q4_0'
      assert.equal(t.type.name, want, t.name)
    }
    // Not a terminal: plain lines with percent by bytes, bytes done of total, rate and ETA; never one per tensor.
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('quantize '))
    assert.ok(lines.length >= 2 && lines.length <= 11, r.stderr)
    for (const l of lines) assert.match(l, /^quantize +\d+% [\d.]+ [KMG]?i?B of [\d.]+ [KMG]?i?B, [\d.]+ [KMG]?i?B\/s, (ETA .+|done)$/)
    const percents = lines.map((l) => Number(/(\d+)%/.exec(l)![1]))
    assert.deepEqual(
      percents,
      [...percents].sort((a, b) => a - b),
    )
    assert.equal(percents.at(-1), 100)
    assert.match(lines.slice(0, -1).join('\n'), /ETA /)
    assert.doesNotMatch(r.stderr, /blk\.\d+\./, 'no line per tensor')
  })

  test('--threads: the same bytes from 1, 2 and 3 worker threads (a K-quant mix)', () => {
    const files = ['1', '2', '3'].map((t) => {
      const out = join(dir, `threads-${t}.gguf`)
      const r = runCli(['quantize', sharedPath('fixtures', 'llama.gguf'), out, '--type', 'Q4_K_M', '--threads', t, '--json'])
      assert.equal(r.status, 0, r.stderr)
      return readFileSync(out)
    })
    assert.ok(files[0]!.equals(files[1]!) && files[0]!.equals(files[2]!))
    const zero = runCli(['quantize', sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'Q4_0', '--threads', '0'])
    assert.equal(zero.status, 2)
    assert.match(zero.stderr, /threads/)
  })

  test('refusals, each by name', () => {
    const bad = join(dir, 'bad-plan.json')
    const cases: Array<[string[], number, RegExp, string?]> = [
      [[sharedPath('fixtures', 'llama-q8_0.gguf'), join(dir, 'x.gguf'), '--type', 'Q8_0', '--pure'], 2, /QUANT_NOTHING_TO_DO/],
      [[sharedPath('fixtures', 'llama-q8_0.gguf'), join(dir, 'x.gguf'), '--type', 'Q4_0', '--pure'], 2, /QUANT_REQUANTIZE/],
      [
        [sharedPath('fixtures', 'llama.gguf'), sharedPath('fixtures', 'llama.gguf'), '--type', 'Q8_0', '--pure'],
        3,
        /GGUF_WRITE_OVERWRITES_INPUT/,
      ],
      [[sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'Q9_9', '--pure'], 2, /QUANT_BAD_TYPE/],
      [[sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'IQ2_XXS', '--pure'], 5, /QUANT_UNSUPPORTED_TYPE/],
      [[sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'Q4_K_X'], 2, /QUANT_BAD_TYPE/],
      [
        [sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'Q4_0', '--pure', '--type-plan', bad],
        2,
        /\/rules.*\[QUANT_BAD_PLAN\]/,
        '{"rules": [{"pattern": "x"}]}',
      ],
      [
        [sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'Q4_0', '--pure', '--type-plan', bad],
        2,
        /regular expression.*\[QUANT_BAD_PLAN\]/,
        '{"rules": [{"pattern": "(", "type": "Q8_0"}]}',
      ],
      [
        [sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'Q4_0', '--pure', '--type-plan', bad],
        2,
        /QUANT_PLAN_UNUSED_RULE/,
        '{"rules": [{"pattern": "nothing\\\\.here", "type": "Q8_0"}]}',
      ],
      [
        [sharedPath('fixtures', 'llama.gguf'), join(dir, 'x.gguf'), '--type', 'Q4_0', '--pure', '--type-plan', bad],
        2,
        /not JSON.*\[QUANT_BAD_PLAN\]/,
        '{rules',
      ],
    ]
    for (const [args, status, code, plan] of cases) {
      if (plan !== undefined) writeFileSync(bad, plan)
      const r = runCli(['quantize', ...args])
      assert.equal(r.status, status, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, code, args.join(' '))
    }
  })
})

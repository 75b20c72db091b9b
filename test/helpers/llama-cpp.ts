// The live comparison against llama.cpp (node-llama-cpp 3.22.1, CPU, one thread, F32 KV cache, no
// flash attention) that the differential tests share.
import assert from 'node:assert/strict'

import type {Llama} from 'node-llama-cpp'

import {Model} from '../../src/lib/engine/model.js'
import type {LoraSpec} from '../../src/lib/lora/index.js'
import {greedy, logprobOf} from './engine.js'

export interface Comparison {
  readonly label: string
  readonly path: string
  readonly text: string
  /** Largest and mean |Δ log p| allowed on the teacher-forced targets. */
  readonly tol: number
  readonly meanTol: number
  readonly greedySteps: number
  readonly nCtx?: number
  /** Receives a one-line summary (t.diagnostic). */
  readonly report?: (line: string) => void
  /** LoRA adapters both engines apply (node-llama-cpp's context `lora` option). */
  readonly lora?: readonly LoraSpec[]
}

/**
 * Both engines on `path`: teacher-forced log-probabilities of `text` must agree within the
 * tolerances, and greedy continuations token for token until a step where llama.cpp's own
 * top-1/top-2 margin is below `tol` (after which another token is legitimate: the rule of
 * shared/reference/README.md); with a tolerance of 1e-3 or less every step must agree. A prompt
 * must reach well past any sliding window, so windows are exercised. Returns our logits.
 */
export async function compareWithLlamaCpp(llama: Llama, c: Comparison): Promise<Float32Array> {
  const nCtx = c.nCtx ?? 256
  const ours = await Model.load(c.path, {lora: c.lora})
  const ids = ours.tokenizer.encode(c.text, {addSpecial: true})
  const window = ours.config.nSwa ?? 0
  assert.ok(ids.length > 3 * window, `the prompt (${ids.length} tokens) reaches well past the window (${window})`)
  const nVocab = ours.config.nVocab
  const theirsModel = await llama.loadModel({modelPath: c.path})
  const theirsCtx = await theirsModel.createContext({
    contextSize: nCtx,
    batchSize: 256,
    threads: 1,
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
    ...(c.lora?.length ? {lora: {adapters: c.lora.map((l) => ({filePath: l.path, scale: l.scale}))}} : {}),
  })
  const ctx = await ours.createContext({nCtx, threads: 1, kvType: 'f32'})
  try {
    assert.deepEqual([...theirsModel.tokenize(c.text)], ids.slice(1), 'both tokenize the text alike')
    const seq = theirsCtx.getSequence()
    const out = await seq.controlledEvaluate(
      ids.map((id) => [id, {generateNext: {logits: true}}]) as Parameters<typeof seq.controlledEvaluate>[0],
    )
    const logits = (await ctx.decode(ids, {pos: 0, logits: 'all'}))!.slice()
    let max = 0
    let sum = 0
    for (let i = 0; i + 1 < ids.length; i++) {
      const theirs = new Float32Array(nVocab)
      for (const [tok, v] of out[i]!.next.logits!) theirs[tok] = v
      const d = Math.abs(logprobOf(logits.subarray(i * nVocab, (i + 1) * nVocab), ids[i + 1]!) - logprobOf(theirs, ids[i + 1]!))
      max = Math.max(max, d)
      sum += d
    }
    const mean = sum / (ids.length - 1)
    assert.ok(max <= c.tol, `${c.label}: max |Δ logprob| ${max} > ${c.tol}`)
    assert.ok(mean <= c.meanTol, `${c.label}: mean |Δ logprob| ${mean} > ${c.meanTol}`)

    // Greedy: llama.cpp step by step with its logits (for the margins), ours through generate.
    await seq.clearHistory()
    const theirTokens: number[] = []
    const margins: number[] = []
    let next = await seq.controlledEvaluate(
      ids.map((id, i) => (i === ids.length - 1 ? [id, {generateNext: {logits: true}}] : id)) as Parameters<
        typeof seq.controlledEvaluate
      >[0],
    )
    for (let step = 0; step < c.greedySteps; step++) {
      const row = [...next[next.length - 1]!.next.logits!.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])
      theirTokens.push(row[0]![0])
      margins.push(row[0]![1] - row[1]![1])
      next = await seq.controlledEvaluate([[row[0]![0], {generateNext: {logits: true}}]])
    }
    const mine = (await ctx.generate(ids, {maxTokens: c.greedySteps, sampling: greedy(), pos: 0, stopTokens: []}).result).tokens
    let first = 0
    while (first < c.greedySteps && mine[first] === theirTokens[first]) first++
    if (first < c.greedySteps) {
      assert.ok(
        margins.slice(0, first + 1).some((m) => m < c.tol),
        `${c.label}: diverged at step ${first} though llama.cpp's margins up to it are >= ${c.tol}`,
      )
    }
    if (c.tol <= 1e-3) assert.equal(first, c.greedySteps, `${c.label}: only ${first} greedy tokens agree`)
    c.report?.(`${c.label}: max |Δ logprob| ${max.toExponential(2)}, mean ${mean.toExponential(2)}, greedy ${first}/${c.greedySteps}`)
    return logits
  } finally {
    ctx.dispose()
    await theirsCtx.dispose()
    await theirsModel.dispose()
    ours.dispose()
  }
}

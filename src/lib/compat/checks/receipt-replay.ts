/**
 * `receipt_replay`: a sampled generation written with a receipt (as `runner run --transcript` does)
 * is replayed by the receipt verifier (`runner verify`'s library function) and comes out VERIFIED:
 * the chain hash is sha256 over the record, the model file is the recorded one, and replaying the
 * recorded settings and seed gives every token, byte and (same build) log-probability again.
 */
import {join} from 'node:path'

import {readGgufModel} from '../../gguf/index.js'
import {verifyReceipt, type VerifyReport} from '../../receipt/index.js'
import {runPrompt} from '../../run/index.js'
import {resolveSamplingOptions} from '../../sampling/index.js'
import {createTokenizer, encodePrompt} from '../../tokenizer/index.js'
import {type CheckClass, type CheckParams, fail, numberParam, pass} from '../types.js'

/** The prompt of the recorded run. */
export const RECEIPT_PROMPT = 'Once upon a time, there was a little'
/** Sampled, not greedy: the replay must reproduce the seeded draws, not only the argmax. */
export const RECEIPT_TEMPERATURE = 0.8

const DEFAULT_TOKENS = 16
const DEFAULT_SEED = 42

function integer(params: CheckParams, key: string, fallback: number, min: number): number {
  const v = numberParam(params, key, fallback)
  if (!Number.isSafeInteger(v) || v < min) throw new TypeError(`parameter ${key} must be an integer >= ${min}, got ${v}`)
  return v
}

/** The verifier's verdict as evidence: verdict, reason, the stage that stopped it and what differed. */
export function describeVerdict(r: VerifyReport): string {
  const stopped = r.checks.find((c) => !c.ok)
  const d = r.divergence
  const at = d ? `; first difference: ${d.at} ${d.index}, expected ${d.expected}, got ${d.got}` : ''
  return `${r.verdict}: ${r.reason}${stopped ? ` (${stopped.name} check)` : ''}${at}`
}

export interface ReceiptReplayHooks {
  /** Test-only: called with the written receipt's path before it is verified (a mutation test edits it here). */
  readonly beforeVerify?: (receiptPath: string) => void | Promise<void>
}

/** The check class, with optional test hooks (the roster's class is `receiptReplay`, without any). */
export function makeReceiptReplay(hooks: ReceiptReplayHooks = {}): CheckClass {
  return {
    name: 'receipt_replay',
    summary:
      'a seeded, sampled run written with a receipt (run --transcript) replays VERIFIED under the receipt verifier (runner verify): sha256 chain, model hash, every token, byte and log-probability',
    params: {
      tokens: {type: 'integer', minimum: 1, description: `tokens to generate (default ${DEFAULT_TOKENS})`},
      seed: {type: 'integer', description: `sampling seed (default ${DEFAULT_SEED}; temperature ${RECEIPT_TEMPERATURE})`},
    },
    async when() {
      return undefined
    },
    async run(row, params, env) {
      const tokens = integer(params, 'tokens', DEFAULT_TOKENS, 1)
      const seed = integer(params, 'seed', DEFAULT_SEED, 0)
      const receiptPath = join(env.tmpDir, 'receipt-replay.json')
      // A context just large enough for the prompt and the output (the default would be the model's, up to 4096).
      const gguf = readGgufModel(row.path)
      const promptTokens = encodePrompt(createTokenizer(gguf), RECEIPT_PROMPT, {addBos: true, parseSpecial: false})
      const run = await runPrompt({
        modelPath: row.path,
        prompt: RECEIPT_PROMPT,
        nPredict: tokens,
        nCtx: promptTokens.length + tokens + 1,
        nBatch: 512,
        threads: env.threads,
        kvType: 'f16',
        addBos: true,
        parseSpecial: false,
        sampling: resolveSamplingOptions({temperature: RECEIPT_TEMPERATURE, seed: BigInt(seed)}),
        receipt: {path: receiptPath},
        signal: env.signal,
      })
      env.signal.throwIfAborted()
      if (!run.receipt) return fail('the run wrote no receipt')
      await hooks.beforeVerify?.(receiptPath)
      const report = await verifyReceipt({receiptPath, modelPath: row.path})
      // A run the model ends at once (finish eos, 0 tokens) is still replayed: the seeded draw of its end.
      const what = `${run.tokens.length} tokens (finish ${run.finishReason}), seed ${seed}, temperature ${RECEIPT_TEMPERATURE}, ${env.threads} thread(s), chain ${run.receipt.chain.slice(0, 16)}…`
      if (report.verdict !== 'VERIFIED') return fail(`${describeVerdict(report)} [${what}]`)
      return pass(`${describeVerdict(report)} [${what}]`)
    },
  }
}

export const receiptReplay: CheckClass = makeReceiptReplay()

import {createHash} from 'node:crypto'
import {readFile} from 'node:fs/promises'

import {ExitCode, RunnerError} from '../errors.js'
import {writeFileAtomic} from '../util/index.js'

/**
 * The base model's per-position distributions, saved by `runner score --save-logits` and read by
 * `--kld`. Compact: per scored position the top-k tokens with their log-probabilities, the log of
 * the mass outside them, and the target's log-probability. Little-endian layout (docs/score.md):
 *
 *   magic "RUNKLD01" | u32 version (1) | u32 k | u32 n_vocab | u32 n_positions
 *   u32 ctx | u32 stride | u32 first | 32 bytes corpus sha256 | u32 n_tokens | i32 tokens[n_tokens]
 *   n_positions × { i32 target | f32 target_logprob | f32 log_rest | k × (i32 token | f32 logprob) }
 *   32 bytes sha256 of everything above (a truncated or altered file is refused)
 */
export const BASE_MAGIC = 'RUNKLD01'
export const BASE_VERSION = 1

export interface BasePosition {
  readonly target: number
  readonly targetLogprob: number
  /** log of the probability outside the top-k (-Infinity when the top-k hold it all). */
  readonly logRest: number
  readonly tokens: Int32Array
  readonly logprobs: Float32Array
}

export interface BaseLogits {
  readonly k: number
  readonly nVocab: number
  readonly ctx: number
  readonly stride: number
  readonly first: number
  readonly corpusSha256: string
  readonly tokens: Int32Array
  readonly positions: readonly BasePosition[]
}

function fail(code: string, file: string, detail: string): never {
  throw new RunnerError(code, `${file}: ${detail}`, ExitCode.invalidModel)
}

export function encodeBaseLogits(b: BaseLogits): Buffer {
  const head = 8 + 4 * 7 + 32 + 4 + 4 * b.tokens.length
  const per = 12 + 8 * b.k
  const buf = Buffer.alloc(head + per * b.positions.length + 32)
  let o = buf.write(BASE_MAGIC, 0, 'latin1')
  for (const v of [BASE_VERSION, b.k, b.nVocab, b.positions.length, b.ctx, b.stride, b.first]) o = buf.writeUInt32LE(v, o)
  o += Buffer.from(b.corpusSha256, 'hex').copy(buf, o)
  o = buf.writeUInt32LE(b.tokens.length, o)
  for (const t of b.tokens) o = buf.writeInt32LE(t, o)
  for (const p of b.positions) {
    o = buf.writeInt32LE(p.target, o)
    o = buf.writeFloatLE(p.targetLogprob, o)
    o = buf.writeFloatLE(p.logRest, o)
    for (let i = 0; i < b.k; i++) {
      o = buf.writeInt32LE(p.tokens[i]!, o)
      o = buf.writeFloatLE(p.logprobs[i]!, o)
    }
  }
  createHash('sha256').update(buf.subarray(0, o)).digest().copy(buf, o)
  return buf
}

export function decodeBaseLogits(buf: Buffer, file: string): BaseLogits {
  const need = (n: number, what: string) => {
    if (buf.length < n) fail('KLD_BASE_TRUNCATED', file, `the file ends at byte ${buf.length}, before ${what}`)
  }
  need(8 + 32, 'the header')
  if (buf.toString('latin1', 0, 8) !== BASE_MAGIC)
    fail('KLD_BASE_BAD_MAGIC', file, `not a runner base-logits file (magic ${JSON.stringify(buf.toString('latin1', 0, 8))})`)
  const u = (i: number) => buf.readUInt32LE(8 + 4 * i)
  if (u(0) !== BASE_VERSION) fail('KLD_BASE_VERSION', file, `version ${u(0)} is not supported (${BASE_VERSION})`)
  const [k, nVocab, nPositions, ctx, stride, first] = [u(1), u(2), u(3), u(4), u(5), u(6)]
  if (k < 2 || k > nVocab || nVocab < 2) fail('KLD_BASE_BAD_HEADER', file, `k ${k} / n_vocab ${nVocab} out of range`)
  need(8 + 28 + 32 + 4, 'the token count')
  const corpusSha256 = buf.subarray(36, 68).toString('hex')
  const nTokens = buf.readUInt32LE(68)
  const head = 72 + 4 * nTokens
  const total = head + (12 + 8 * k) * nPositions + 32
  need(total, `${nPositions} positions of top-${k} and the checksum (${total} bytes)`)
  if (buf.length !== total) fail('KLD_BASE_BAD_HEADER', file, `${buf.length} bytes, the header implies ${total}`)
  const digest = createHash('sha256')
    .update(buf.subarray(0, total - 32))
    .digest()
  if (!digest.equals(buf.subarray(total - 32))) fail('KLD_BASE_CORRUPT', file, 'the checksum does not match: the file was altered or cut')
  const tokens = new Int32Array(nTokens)
  for (let i = 0; i < nTokens; i++) tokens[i] = buf.readInt32LE(72 + 4 * i)
  const positions: BasePosition[] = []
  let o = head
  for (let p = 0; p < nPositions; p++) {
    const target = buf.readInt32LE(o)
    const targetLogprob = buf.readFloatLE(o + 4)
    const logRest = buf.readFloatLE(o + 8)
    o += 12
    const ids = new Int32Array(k)
    const lps = new Float32Array(k)
    for (let i = 0; i < k; i++, o += 8) {
      ids[i] = buf.readInt32LE(o)
      lps[i] = buf.readFloatLE(o + 4)
      if (ids[i]! < 0 || ids[i]! >= nVocab)
        fail('KLD_BASE_BAD_HEADER', file, `position ${p}: token ${ids[i]} outside the vocabulary of ${nVocab}`)
    }
    positions.push({target, targetLogprob, logRest, tokens: ids, logprobs: lps})
  }
  return {k, nVocab, ctx, stride, first, corpusSha256, tokens, positions}
}

export async function readBaseLogits(path: string): Promise<BaseLogits> {
  let buf: Buffer
  try {
    buf = await readFile(path)
  } catch (error) {
    throw new RunnerError('KLD_BASE_UNREADABLE', `cannot read ${path}: ${(error as Error).message}`, ExitCode.usage)
  }
  return decodeBaseLogits(buf, path)
}

/** Written to a temporary name in the same folder, fsynced, then renamed. */
export async function writeBaseLogits(path: string, b: BaseLogits): Promise<void> {
  await writeFileAtomic(path, encodeBaseLogits(b))
}

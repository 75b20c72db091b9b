import {createHash} from 'node:crypto'

import type {RopeOverrides} from '../arch/index.js'

/**
 * The receipt file format (docs/receipts.md is the specification). A receipt is one line of compact
 * JSON whose last keys are "chain" (sha256 over every byte before `,"chain"`) and, when signed,
 * "signature" (Ed25519 over every byte before `,"signature"`). Keys appear in the order below;
 * 64-bit integers (the seed) are decimal strings, so no JSON reader can round them through a double.
 */
export const RECEIPT_FORMAT = 'runner.receipt'
export const RECEIPT_VERSION = 1

export interface ReceiptSampling {
  readonly temperature: number
  readonly topK: number
  readonly topP: number
  readonly minP: number
  readonly repeatPenalty: number
  readonly penaltyLastN: number
  readonly presencePenalty: number
  readonly frequencyPenalty: number
  /** Decimal string of the 64-bit seed. */
  readonly seed: string
}

export interface ReceiptAdapter {
  readonly name: string
  readonly bytes: number
  readonly sha256: string
  readonly alpha: number
  readonly scale: number
}

/** The model signature checked when the model loaded (--model-sig, docs/model-signing.md). */
export interface ReceiptModelSignature {
  /** sha256 hex of the signer's public key, DER SubjectPublicKeyInfo. */
  readonly keyFingerprint: string
  readonly curve: 'P-256' | 'P-384' | 'P-521'
  readonly predicateType: string
  /** sha256 hex of the bundle file. */
  readonly bundleSha256: string
}

export interface ReceiptBody {
  readonly format: typeof RECEIPT_FORMAT
  readonly version: number
  readonly created: {readonly started: string; readonly finished: string}
  readonly model: {
    readonly architecture: string
    readonly files: ReadonlyArray<{readonly name: string; readonly bytes: number; readonly sha256: string}>
    /** LoRA adapters the run applied, in order (absent: none). alpha is the file's, scale the user's. */
    readonly adapters?: ReadonlyArray<ReceiptAdapter>
    /** The OMS signature verified before the model was mapped (absent: none was checked). */
    readonly signature?: ReceiptModelSignature
  }
  readonly engine: {
    readonly runner: string
    readonly abi: number
    readonly addonSha256: string
    readonly packageSha256: string
    readonly cpuLevel: string
    readonly cpu: string
    readonly platform: string
  }
  /** What a replay is expected to reproduce and how (docs/receipts.md, "Verification profile"). */
  readonly profile: {readonly name: string; readonly version: number}
  readonly config: {
    readonly maxTokens: number
    readonly nCtx: number
    readonly nBatch: number
    readonly threads: number
    readonly kvType: 'f16' | 'f32'
    readonly addBos: boolean
    /** The prompt's special-token text was read as special tokens (run --special). */
    readonly parseSpecial: boolean
    readonly stopTokens: readonly number[]
    readonly sampling: ReceiptSampling
    /** What constrained the output (run --json-schema/--grammar/--json-object): replayed by verify. */
    readonly constraint?: {readonly kind: string; readonly sha256: string; readonly text: string}
    /** The rope overrides the run was given (--rope-scaling, --yarn-*; absent: none): replayed by verify. */
    readonly rope?: RopeOverrides
    /** Speculative decoding the run used (docs/speculative.md): recorded; a replay does not need it, since it cannot change a token. */
    readonly draft?:
      | {readonly source: 'lookup'; readonly nMax: number; readonly ngramMin: number; readonly ngramMax: number}
      | {readonly source: 'model'; readonly nMax: number; readonly pMin: number; readonly model: string}
      | {readonly source: 'mtp'; readonly nMax: number; readonly pMin: number}
    /** Context shift (run --context-shift): the positions kept, as the engine counts them; replayed by verify. */
    readonly contextShift?: {readonly keep: number}
  }
  readonly prompt: {readonly text: string; readonly tokens: readonly number[]}
  readonly output: {
    readonly tokens: readonly number[]
    /** log p of each output token as the engine computed it (float32 values, exact in JSON). */
    readonly logprobs: readonly number[]
    readonly text: string
    /** The exact bytes of the detokenized output, hex (text may hold U+FFFD where bytes are not UTF-8). */
    readonly bytes: string
    readonly finishReason: string
  }
  /** Chain hash of the previous receipt of a chain, or null. */
  readonly prev: string | null
}

export interface ReceiptSignature {
  readonly algorithm: 'ed25519'
  /** 32-byte public key, hex. */
  readonly publicKey: string
  /** 64-byte signature, hex. */
  readonly value: string
}

export const CHAIN_MARK = ',"chain":"'
export const SIGNATURE_MARK = ',"signature":'

export const sha256Hex = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex')

/** The body's JSON without its closing brace: the bytes the chain hash covers. */
export function chainedPrefix(body: ReceiptBody): Buffer {
  const json = JSON.stringify(body)
  return Buffer.from(json.slice(0, -1), 'utf8')
}

/** The bytes a signature covers (everything before `,"signature"`), with the chain hash appended. */
export function withChain(prefix: Buffer): {signed: Buffer; chain: string} {
  const chain = sha256Hex(prefix)
  return {signed: Buffer.concat([prefix, Buffer.from(`${CHAIN_MARK}${chain}"`)]), chain}
}

/** The whole file: chained prefix, chain, optional signature, closing brace and a newline. */
export function receiptBytes(signed: Buffer, signature?: ReceiptSignature): Buffer {
  const tail = signature ? `${SIGNATURE_MARK}${JSON.stringify(signature)}}\n` : '}\n'
  return Buffer.concat([signed, Buffer.from(tail)])
}

const TAIL = /^,"chain":"([0-9a-f]{64})"(?:,"signature":(\{[^{}]*\}))?\}\n?$/

export interface SplitReceipt {
  /** Bytes before `,"chain"`. */
  readonly prefix: Buffer
  readonly chain: string
  /** Bytes before `,"signature"` (prefix plus the chain key). */
  readonly signed: Buffer
  readonly signatureJson: string | undefined
}

/**
 * Find the chain and signature by bytes, as a person with a text editor would: the last
 * `,"chain":"` must be followed by 64 hex digits, optionally the signature object, then `}`. No
 * JSON string can hold an unescaped quote, so the marker cannot hide inside a value.
 */
export function splitReceipt(file: Buffer): SplitReceipt | string {
  const at = file.lastIndexOf(CHAIN_MARK)
  if (at < 0) return 'it has no "chain" key'
  const m = TAIL.exec(file.subarray(at).toString('latin1'))
  if (!m) return 'the bytes after "chain" are not the 64-digit hash, an optional "signature" object and the closing brace'
  const chain = m[1]!
  return {prefix: file.subarray(0, at), chain, signed: file.subarray(0, at + CHAIN_MARK.length + 65), signatureJson: m[2]}
}

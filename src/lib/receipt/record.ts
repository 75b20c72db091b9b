import {constants} from 'node:fs'
import {access} from 'node:fs/promises'
import {basename, dirname, resolve} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import type {GgufModelFiles} from '../gguf/index.js'
import type {LoraAdapter, LoraSpec} from '../lora/index.js'
import type {SamplingOptions} from '../sampling/index.js'
import type {VerifiedSignature} from '../signing/index.js'
import {checkOutputPath, sha256File, writeFileAtomic} from '../util/index.js'
import {
  chainedPrefix,
  RECEIPT_FORMAT,
  RECEIPT_VERSION,
  type ReceiptAdapter,
  type ReceiptBody,
  type ReceiptModelSignature,
  type ReceiptSignature,
  receiptBytes,
  withChain,
} from './format.js'
import {engineIdentity} from './identity.js'
import {intactChain} from './prev.js'
import {hex, type KeyPair, readSecretKey, sign} from './keys.js'

import {PROFILE} from './profile.js'
import {canonicalRope} from './schema.js'

export {PROFILE}

export interface ReceiptOptions {
  /** Where the receipt will be written: its folder must exist and be writable. */
  readonly path: string
  /** PKCS#8 PEM Ed25519 key to sign with. */
  readonly signKeyPath?: string
  /** The previous receipt of a chain; this one records its chain hash. */
  readonly prevPath?: string
}

/** What a receipt needs besides the run itself, checked before the run so a typo costs nothing. */
export interface ReceiptSetup {
  readonly key: KeyPair | undefined
  readonly prev: string | null
  /** sha256 of the model files, hashed while the model runs. */
  readonly modelFiles: Promise<ReceiptBody['model']['files']>
  /** The same for the LoRA adapters applied, in order (empty: none). */
  readonly adapters: Promise<ReceiptAdapter[]>
  readonly engine: Promise<ReceiptBody['engine']>
}

/** An adapter as a receipt needs it: the user's spec and the file's alpha. */
export interface ReceiptAdapterInput {
  readonly spec: LoraSpec
  readonly adapter: Pick<LoraAdapter, 'alpha' | 'fileSize'>
}

export async function prepareReceipt(
  model: GgufModelFiles,
  options: ReceiptOptions,
  adapters: readonly ReceiptAdapterInput[] = [],
): Promise<ReceiptSetup> {
  const folder = dirname(resolve(options.path))
  try {
    await access(folder, constants.W_OK)
  } catch (error) {
    throw new RunnerError(
      'RECEIPT_UNWRITABLE',
      `--transcript ${options.path}: cannot write into ${folder} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      ExitCode.usage,
    )
  }
  // A folder or a device at that path (the rename would replace it) is refused now, not after the run.
  await checkOutputPath(options.path, {replace: true})
  const key = options.signKeyPath === undefined ? undefined : await readSecretKey(options.signKeyPath)
  let prev: string | null = null
  if (options.prevPath !== undefined) {
    const chain = await intactChain(options.prevPath)
    if (typeof chain !== 'string') throw new RunnerError('RECEIPT_PREV_INVALID', `--transcript-prev: ${chain.problem}`, ExitCode.usage)
    prev = chain
  }
  const modelFiles = Promise.all(
    model.shards.map(async (s) => ({name: basename(s.path), bytes: s.fileSize, sha256: await sha256File(s.path)})),
  )
  const adapterFiles = Promise.all(
    adapters.map(async (a) => ({
      name: basename(a.spec.path),
      bytes: a.adapter.fileSize,
      sha256: await sha256File(a.spec.path),
      alpha: a.adapter.alpha,
      scale: a.spec.scale,
    })),
  )
  const engine = engineIdentity()
  // All are awaited when the receipt is written; a failure must not surface earlier as unhandled.
  modelFiles.catch(() => {})
  adapterFiles.catch(() => {})
  engine.catch(() => {})
  return {key, prev, modelFiles, adapters: adapterFiles, engine}
}

export interface RunRecord {
  readonly architecture: string
  /** The model signature verified at load (Model.signature), recorded as model.signature. */
  readonly signature?: VerifiedSignature
  readonly started: Date
  readonly finished: Date
  readonly config: Omit<ReceiptBody['config'], 'sampling'> & {readonly sampling: SamplingOptions}
  readonly prompt: {readonly text: string; readonly tokens: readonly number[]}
  readonly output: {
    readonly tokens: readonly number[]
    readonly text: string
    readonly bytes: Uint8Array
    readonly finishReason: string
    readonly logprobs: readonly number[]
  }
}

/** What a receipt records of a verified model signature. */
export function receiptModelSignature(s: VerifiedSignature): ReceiptModelSignature {
  return {keyFingerprint: s.keyFingerprint, curve: s.curve, predicateType: s.predicateType, bundleSha256: s.bundleSha256}
}

async function modelRecord(run: RunRecord, setup: ReceiptSetup): Promise<ReceiptBody['model']> {
  const adapters = await setup.adapters
  return {
    architecture: run.architecture,
    files: await setup.modelFiles,
    ...(adapters.length > 0 ? {adapters} : {}),
    ...(run.signature ? {signature: receiptModelSignature(run.signature)} : {}),
  }
}

/** Assemble, chain, sign (when set up to) and atomically write a receipt; returns its chain hash. */
export async function writeReceipt(path: string, setup: ReceiptSetup, run: RunRecord): Promise<{chain: string; bytes: number}> {
  const s = run.config.sampling
  const body: ReceiptBody = {
    format: RECEIPT_FORMAT,
    version: RECEIPT_VERSION,
    created: {started: run.started.toISOString(), finished: run.finished.toISOString()},
    model: await modelRecord(run, setup),
    engine: await setup.engine,
    profile: PROFILE,
    config: {
      maxTokens: run.config.maxTokens,
      nCtx: run.config.nCtx,
      nBatch: run.config.nBatch,
      threads: run.config.threads,
      kvType: run.config.kvType,
      addBos: run.config.addBos,
      parseSpecial: run.config.parseSpecial,
      stopTokens: run.config.stopTokens,
      sampling: {
        temperature: s.temperature,
        topK: s.topK,
        topP: s.topP,
        minP: s.minP,
        repeatPenalty: s.repeatPenalty,
        penaltyLastN: s.penaltyLastN,
        presencePenalty: s.presencePenalty,
        frequencyPenalty: s.frequencyPenalty,
        seed: s.seed.toString(),
      },
      // Last: the canonical key order is the schema's (src/lib/receipt/schema.ts), optional keys after.
      ...(run.config.constraint ? {constraint: run.config.constraint} : {}),
      ...(run.config.rope ? {rope: canonicalRope(run.config.rope)} : {}),
      ...(run.config.draft ? {draft: run.config.draft} : {}),
      ...(run.config.contextShift ? {contextShift: {keep: run.config.contextShift.keep}} : {}),
    },
    prompt: {text: run.prompt.text, tokens: run.prompt.tokens},
    output: {
      tokens: run.output.tokens,
      logprobs: run.output.logprobs,
      text: run.output.text,
      bytes: Buffer.from(run.output.bytes).toString('hex'),
      finishReason: run.output.finishReason,
    },
    prev: setup.prev,
  }
  const {signed, chain} = withChain(chainedPrefix(body))
  let signature: ReceiptSignature | undefined
  if (setup.key)
    signature = {algorithm: 'ed25519', publicKey: hex(setup.key.publicKey), value: hex(await sign(signed, setup.key.secretKey))}
  const bytes = receiptBytes(signed, signature)
  await writeFileAtomic(path, bytes)
  return {chain, bytes: bytes.length}
}

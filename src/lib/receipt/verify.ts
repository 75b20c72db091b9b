import {readFile} from 'node:fs/promises'
import {totalmem} from 'node:os'
import {basename} from 'node:path'

import {checkRopeOverrides, planModel} from '../arch/index.js'
import {RunnerError} from '../errors.js'
import {Draft, Model, Session} from '../engine/index.js'
import {fitPrompt, generate, type Generation} from '../generate/index.js'
import {compileConstraint, type Constraint, type ConstraintKind, constraintHash} from '../grammar/index.js'
import {type GgufModelFiles, readGgufModel} from '../gguf/index.js'
import {type LoraSpec} from '../lora/index.js'
import {resolveSamplingOptions, type SamplingOptions} from '../sampling/index.js'
import {isSignatureRefusal, type SignaturePolicy, type VerifiedSignature, verifyModelSignature} from '../signing/index.js'
import {createTokenizer, encodePrompt} from '../tokenizer/index.js'
import {preview, quoted, sha256File} from '../util/index.js'
import {
  chainedPrefix,
  RECEIPT_FORMAT,
  type ReceiptBody,
  type ReceiptModelSignature,
  RECEIPT_VERSION,
  receiptBytes,
  sha256Hex,
  splitReceipt,
  withChain,
} from './format.js'
import {engineIdentity} from './identity.js'
import {readPublicKey, verifySignature} from './keys.js'
import {intactChain} from './prev.js'
import {canonicalize, checkReceiptStructure, type ParsedReceipt} from './schema.js'

/** How far another build's log-probabilities may be from the recorded ones (its rounding, not a different run). */
export const LOGPROB_TOLERANCE = 1e-3

export type Verdict = 'VERIFIED' | 'DIVERGED' | 'UNVERIFIABLE'
export const VERDICT_EXIT: Readonly<Record<Verdict, 0 | 2 | 3>> = {VERIFIED: 0, DIVERGED: 2, UNVERIFIABLE: 3}

export interface Check {
  readonly name: 'structure' | 'chain' | 'signature' | 'link' | 'model' | 'settings' | 'replay'
  readonly ok: boolean
  readonly detail: string
}

export interface Divergence {
  /** What differed first: an output token, the prompt's tokens, the output bytes or text, or a log-probability. */
  readonly at: 'token' | 'prompt' | 'bytes' | 'text' | 'logprob'
  readonly index: number
  readonly expected: string
  readonly got: string
}

export interface VerifyReport {
  readonly verdict: Verdict
  readonly exitCode: 0 | 2 | 3
  /** One sentence: why this verdict. */
  readonly reason: string
  readonly checks: readonly Check[]
  readonly divergence?: Divergence
  /** Chain hash of the receipt (when its structure could be read). */
  readonly chain?: string
  readonly signer?: string
  readonly modelLoaded: boolean
}

export interface VerifyOptions {
  readonly receiptPath: string
  readonly modelPath: string
  /** The LoRA adapter files the receipt names, in its order (their scales come from the receipt). */
  readonly loraPaths?: readonly string[]
  /** Public keys (SPKI PEM files or 64 hex digits) whose signatures are trusted. */
  readonly trustKeys?: readonly string[]
  readonly requireSigned?: boolean
  /** The receipt this one must link to. */
  readonly prevPath?: string
  /** Check the model's OMS signature (--model-sig, --model-pubkey, --require-signed-model) with the model files. */
  readonly signature?: SignaturePolicy
  /** Called as each stage starts (the CLI shows progress). */
  readonly onStage?: (stage: Check['name']) => void
}

type Fail = (name: Check['name'], detail: string, verdict?: Verdict, divergence?: Divergence) => never
type Pass = (name: Check['name'], detail: string) => void

class Stop extends Error {
  constructor(
    readonly verdict: Verdict,
    readonly reason: string,
    readonly divergence?: Divergence,
  ) {
    super(reason)
  }
}

/**
 * Check a receipt in the documented order: structure and chain, signature and trust, link, model
 * file, settings; then load the model and replay. Every UNVERIFIABLE verdict is reached before the
 * model is loaded; only the replay can say DIVERGED.
 */
export async function verifyReceipt(options: VerifyOptions): Promise<VerifyReport> {
  const checks: Check[] = []
  let receipt: ParsedReceipt | undefined
  let chain: string | undefined
  let signer: string | undefined
  let modelLoaded = false
  const pass: Pass = (name, detail) => {
    checks.push({name, ok: true, detail})
  }
  const fail: Fail = (name, detail, verdict = 'UNVERIFIABLE', divergence) => {
    checks.push({name, ok: false, detail})
    throw new Stop(verdict, detail, divergence)
  }
  try {
    // 1. Structure and chain hash.
    options.onStage?.('structure')
    let file: Buffer
    try {
      file = await readFile(options.receiptPath)
    } catch (error) {
      fail('structure', `cannot read ${options.receiptPath}: ${(error as Error).message}`)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(file.toString('utf8'))
    } catch (error) {
      fail('structure', `${options.receiptPath} is not JSON: ${(error as Error).message}`)
    }
    const head = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as {format?: unknown; version?: unknown}
    if (head.format !== RECEIPT_FORMAT)
      fail('structure', `${options.receiptPath} is not a runner receipt (no "format": "${RECEIPT_FORMAT}")`)
    if (head.version !== RECEIPT_VERSION)
      fail('structure', `receipt version ${preview(head.version)} is unknown to this verifier (it reads version ${RECEIPT_VERSION})`)
    const split = splitReceipt(file)
    if (typeof split === 'string') fail('structure', `the receipt's tail is malformed: ${split}`)
    const structured = checkReceiptStructure(parsed)
    if (typeof structured === 'string') fail('structure', `the receipt is malformed: ${structured}`)
    receipt = structured
    if (receipt.chain !== split.chain) fail('structure', 'the receipt has more than one "chain" key')
    pass('structure', `format ${RECEIPT_FORMAT} version ${RECEIPT_VERSION}`)
    options.onStage?.('chain')
    const recomputed = sha256Hex(split.prefix)
    if (recomputed !== split.chain)
      fail('chain', `the record has been altered: sha256 of the bytes before "chain" is ${recomputed}, the receipt says ${split.chain}`)
    chain = split.chain
    const {chain: _chain, signature, ...body} = canonicalize(receipt) as ParsedReceipt
    if (!receiptBytes(withChain(chainedPrefix(body)).signed, signature).equals(file)) {
      fail(
        'chain',
        'the receipt is not in the canonical form of docs/receipts.md (one line of compact JSON, keys in order, the exact tail)',
      )
    }
    pass('chain', `sha256 ${chain} over ${split.prefix.length} bytes`)

    // 2. Signature and trust.
    options.onStage?.('signature')
    const trusted = await Promise.all((options.trustKeys ?? []).map(async (k) => Buffer.from(await readPublicKey(k)).toString('hex')))
    if (receipt.signature) {
      signer = receipt.signature.publicKey
      const ok = await verifySignature(Buffer.from(receipt.signature.value, 'hex'), split.signed, Buffer.from(signer, 'hex'))
      if (!ok) fail('signature', `the signature does not match the receipt's bytes under its public key ${signer}`)
      if (trusted.length > 0 && !trusted.includes(signer))
        fail('signature', `signed by ${signer}, which is not among the ${trusted.length} trusted key(s)`)
      if (options.requireSigned && trusted.length === 0)
        fail('signature', `--require-signed needs --trust-key: a valid signature by an unpinned key (${signer}) proves nothing`)
      pass('signature', `valid Ed25519 signature by ${signer}${trusted.length > 0 ? ' (trusted)' : ' (no key pinned with --trust-key)'}`)
    } else if (options.requireSigned) {
      fail('signature', 'the receipt is not signed, and --require-signed was given')
    } else {
      pass('signature', 'not signed')
    }

    // 3. The link to the previous receipt.
    options.onStage?.('link')
    if (options.prevPath !== undefined) {
      const prevChain = await intactChain(options.prevPath)
      if (typeof prevChain !== 'string') fail('link', `the previous receipt ${prevChain.problem}`)
      if (receipt.prev !== prevChain)
        fail('link', `the receipt links to ${receipt.prev ?? 'nothing'}, but ${options.prevPath} has chain hash ${prevChain}`)
      pass('link', `links to ${basename(options.prevPath)} (${prevChain})`)
    } else {
      pass('link', receipt.prev ? `links to ${receipt.prev} (not checked: pass --prev)` : 'first of its chain')
    }

    // 4. The model files.
    options.onStage?.('model')
    let gguf: GgufModelFiles
    try {
      gguf = readGgufModel(options.modelPath)
    } catch (error) {
      fail('model', `cannot read the model ${options.modelPath}: ${(error as Error).message}`)
    }
    const files = receipt.model.files
    if (gguf.shards.length !== files.length)
      fail('model', `the receipt names ${files.length} model file(s), ${options.modelPath} has ${gguf.shards.length}`)
    const architecture = gguf.metadata.get('general.architecture')?.value
    if (architecture !== receipt.model.architecture)
      fail('model', `wrong model: ${options.modelPath} is a ${String(architecture)} model, the receipt names ${receipt.model.architecture}`)
    for (const [i, shard] of gguf.shards.entries()) {
      if (shard.fileSize !== files[i]!.bytes)
        fail('model', `wrong model: ${shard.path} has ${shard.fileSize} bytes, the receipt's ${files[i]!.name} ${files[i]!.bytes}`)
      const sha = await sha256File(shard.path)
      if (sha !== files[i]!.sha256)
        fail('model', `wrong model: ${shard.path} has sha256 ${sha}, the receipt was made with ${files[i]!.name} (${files[i]!.sha256})`)
    }
    const lora = await checkAdapters(receipt.model.adapters ?? [], options.loraPaths ?? [], fail)
    const modelSignature = await checkModelSignature(gguf, receipt.model.signature, options.signature, fail)
    pass(
      'model',
      `sha256 ${files.map((f) => f.sha256).join(', ')}` +
        modelSignature.detail +
        (lora.length > 0 ? `; adapters ${(receipt.model.adapters ?? []).map((a) => `${a.sha256} at scale ${a.scale}`).join(', ')}` : ''),
    )

    // 5. Settings: the same validation the CLI applies, before any weight is mapped.
    options.onStage?.('settings')
    const tokenizer = createTokenizer(gguf)
    let sampling: SamplingOptions
    try {
      sampling = resolveSamplingOptions({...receipt.config.sampling, seed: BigInt(receipt.config.sampling.seed), logprobs: true})
    } catch (error) {
      fail('settings', `the recorded settings are invalid: ${(error as Error).message}`)
    }
    const c = receipt.config
    const problems = [
      rangeProblem('config.nCtx', c.nCtx, 1, 1 << 24),
      rangeProblem('config.nBatch', c.nBatch, 1, 65536),
      rangeProblem('config.threads', c.threads, 1, 256),
      rangeProblem('config.maxTokens', c.maxTokens, 0, 2 ** 31 - 1),
      receipt.prompt.tokens.length === 0 ? 'prompt.tokens is empty' : undefined,
      // The last output token is reported before it would be evaluated, so a run that filled the context has nCtx + 1
      // (a run that shifted its context may have had any number).
      !c.contextShift && !fitPrompt(receipt.prompt.tokens.length, c.nCtx, Math.max(0, receipt.output.tokens.length - 1)).fits
        ? `prompt and output (${receipt.prompt.tokens.length + receipt.output.tokens.length} tokens) exceed config.nCtx ${c.nCtx}`
        : undefined,
      kvProblem(gguf, c),
      receipt.output.tokens.length > c.maxTokens
        ? `output has ${receipt.output.tokens.length} tokens, more than config.maxTokens ${c.maxTokens}`
        : undefined,
      receipt.output.logprobs.length !== receipt.output.tokens.length ? 'output.logprobs and output.tokens differ in length' : undefined,
      [...receipt.prompt.tokens, ...receipt.output.tokens, ...c.stopTokens].some((t) => t >= tokenizer.vocabSize)
        ? `a token id is outside the model's vocabulary of ${tokenizer.vocabSize}`
        : undefined,
    ].filter((p): p is string => p !== undefined)
    if (problems.length > 0) fail('settings', `the recorded settings are invalid: ${problems[0]}`)
    try {
      if (c.rope) checkRopeOverrides(c.rope)
    } catch (error) {
      fail('settings', `the recorded settings are invalid: config.rope: ${(error as Error).message}`)
    }
    let constraint: Constraint | undefined
    if (c.constraint) {
      const kind = c.constraint.kind as ConstraintKind
      if (constraintHash(kind, c.constraint.text) !== c.constraint.sha256)
        fail('settings', 'config.constraint.sha256 is not the hash of its text')
      try {
        constraint = compileConstraint(kind === 'json-object' ? {kind} : {kind: kind as 'json-schema' | 'gbnf', text: c.constraint.text})
      } catch (error) {
        fail('settings', `the recorded constraint does not compile: ${(error as Error).message}`)
      }
    }
    pass(
      'settings',
      `seed ${c.sampling.seed}, temperature ${c.sampling.temperature}, ${c.maxTokens} max tokens, context ${c.nCtx}, ${c.threads} thread(s), KV ${c.kvType}` +
        (constraint ? `, constrained by ${constraint.kind} ${constraint.sha256.slice(0, 12)}` : ''),
    )

    // 6. Replay.
    options.onStage?.('replay')
    const promptTokens = encodePrompt(tokenizer, receipt.prompt.text, {addBos: c.addBos, parseSpecial: c.parseSpecial})
    const p = firstDifference(promptTokens, receipt.prompt.tokens)
    if (p >= 0) {
      fail(
        'replay',
        `the prompt text does not tokenize to the recorded prompt tokens (first difference at prompt token ${p})`,
        'DIVERGED',
        {
          at: 'prompt',
          index: p,
          expected: String(receipt.prompt.tokens[p] ?? 'end'),
          got: String(promptTokens[p] ?? 'end'),
        },
      )
    }
    let model: Model
    try {
      model = await Model.load(options.modelPath, {
        lora,
        rope: receipt.config.rope,
        ...(modelSignature.verified ? {verifiedSignature: modelSignature.verified} : {}),
      })
    } catch (error) {
      if (isSignatureRefusal(error)) fail('model', error.message)
      // The overrides are checked against the model's declaration at load: a bad set is the receipt's settings.
      if (error instanceof RunnerError && error.code === 'ROPE_BAD_OPTION')
        fail('settings', `the recorded settings are invalid: ${error.message}`)
      // The files hashed as recorded, so an adapter the engine refuses is not the receipt's run.
      if (lora.length > 0 && error instanceof RunnerError && error.code.startsWith('LORA_')) fail('model', error.message)
      throw error
    }
    modelLoaded = true
    try {
      await replay(model, receipt, sampling, fail, pass, signerSameBuild(receipt), constraint)
    } finally {
      model.dispose()
    }
    return {
      verdict: 'VERIFIED',
      exitCode: 0,
      reason: `replayed ${receipt.output.tokens.length} tokens: every token and byte matches`,
      checks,
      chain,
      signer,
      modelLoaded,
    }
  } catch (error) {
    if (error instanceof Stop)
      return {
        verdict: error.verdict,
        exitCode: VERDICT_EXIT[error.verdict],
        reason: error.reason,
        checks,
        chain,
        signer,
        modelLoaded,
        ...(error.divergence ? {divergence: error.divergence} : {}),
      }
    throw error
  }
}

/** True when this process runs the very build (addon and JavaScript) that made the receipt. */
async function signerSameBuild(receipt: ParsedReceipt): Promise<boolean> {
  const here = await engineIdentity()
  return here.addonSha256 === receipt.engine.addonSha256 && here.packageSha256 === receipt.engine.packageSha256
}

async function replay(
  model: Model,
  receipt: ParsedReceipt,
  sampling: SamplingOptions,
  fail: Fail,
  pass: Pass,
  sameBuild: Promise<boolean>,
  constraint: Constraint | undefined,
): Promise<void> {
  const c = receipt.config
  const expected = receipt.output.tokens
  // A run cut short (Ctrl+C) is replayed for exactly the tokens it produced.
  const cut = receipt.output.finishReason === 'aborted' || receipt.output.finishReason === 'stopped'
  const ctx = await model.createContext({nCtx: c.nCtx, nBatch: c.nBatch, threads: c.threads, kvType: c.kvType})
  const got: number[] = []
  const tok = model.tokenizer
  let generation: Generation | undefined
  // A recorded prompt lookup is replayed as recorded (it needs no file); a draft model is not in the
  // receipt, and is not needed: a draft cannot change a token (docs/speculative.md).
  let draft: Draft | undefined
  try {
    if (c.draft?.source === 'lookup') draft = lookupDraft(c.draft, fail)
    generation = generate(new Session(ctx), {
      prompt: receipt.prompt.tokens,
      maxTokens: cut ? expected.length : c.maxTokens,
      sampling,
      stopTokens: c.stopTokens,
      ...(constraint ? {constraint} : {}),
      ...(draft ? {draft} : {}),
      ...(c.contextShift ? {contextShift: {keep: c.contextShift.keep}} : {}),
    })
    // Token by token, so a divergence stops the replay at once.
    for await (const e of generation.events) {
      if (e.token < 0) continue
      const i = got.length
      got.push(e.token)
      if (e.token !== expected[i]) {
        const exp = expected[i] === undefined ? `end of output (${receipt.output.finishReason})` : describe(expected[i]!)
        fail('replay', `diverged at output token ${i}: the receipt has ${exp}, the model produced ${describe(e.token)}`, 'DIVERGED', {
          at: 'token',
          index: i,
          expected: exp,
          got: describe(e.token),
        })
      }
    }
    const result = await generation.result
    const logprobs = result.tokens.map((t) => t.logprob)
    if (got.length < expected.length) {
      const exp = describe(expected[got.length]!)
      fail(
        'replay',
        `diverged at output token ${got.length}: the receipt has ${exp}, the model ended (${result.finishReason})`,
        'DIVERGED',
        {at: 'token', index: got.length, expected: exp, got: `end (${result.finishReason})`},
      )
    }
    if (!cut && result.finishReason !== receipt.output.finishReason) {
      fail('replay', `the run ended "${result.finishReason}", the receipt says "${receipt.output.finishReason}"`, 'DIVERGED', {
        at: 'token',
        index: got.length,
        expected: `end (${receipt.output.finishReason})`,
        got: `end (${result.finishReason})`,
      })
    }
    const bytes = Buffer.from(tok.decodeBytes(got))
    const recorded = Buffer.from(receipt.output.bytes, 'hex')
    if (!bytes.equals(recorded)) {
      const b = firstDifference([...bytes], [...recorded])
      fail('replay', `the output bytes differ from the tokens' bytes at byte ${b}`, 'DIVERGED', {
        at: 'bytes',
        index: b,
        expected: hexAt(recorded, b),
        got: hexAt(bytes, b),
      })
    }
    if (result.text !== receipt.output.text) {
      const i = firstDifference([...result.text], [...receipt.output.text])
      fail('replay', `the output text differs from the tokens' text at character ${i}`, 'DIVERGED', {
        at: 'text',
        index: i,
        expected: [...receipt.output.text][i] ?? 'end',
        got: [...result.text][i] ?? 'end',
      })
    }
    // Log-probabilities: bit-exact on the same build (and in practice on every CPU level, whose
    // kernels are bitwise equal); another build may round differently, within LOGPROB_TOLERANCE.
    // The build is named by the receipt itself, so an edit there only buys that tolerance.
    const l = logprobs.findIndex((v, i) => !Object.is(Math.fround(v), Math.fround(receipt.output.logprobs[i]!)))
    const same = await sameBuild
    const far = logprobs.findIndex((v, i) => !(Math.abs(v - receipt.output.logprobs[i]!) <= LOGPROB_TOLERANCE))
    if (far >= 0 && !same) {
      fail(
        'replay',
        `the log-probability of output token ${far} is ${logprobs[far]}, the receipt says ${receipt.output.logprobs[far]} (more than ${LOGPROB_TOLERANCE} apart)`,
        'DIVERGED',
        {
          at: 'logprob',
          index: far,
          expected: String(receipt.output.logprobs[far]),
          got: String(logprobs[far]),
        },
      )
    }
    if (l >= 0 && same) {
      fail(
        'replay',
        `same build, yet the log-probability of output token ${l} differs: ${receipt.output.logprobs[l]} recorded, ${logprobs[l]} replayed`,
        'DIVERGED',
        {
          at: 'logprob',
          index: l,
          expected: String(receipt.output.logprobs[l]),
          got: String(logprobs[l]),
        },
      )
    }
    const drafted = c.draft ? (draft ? '; replayed with prompt lookup, as recorded' : '; replayed without the recorded draft model') : ''
    pass(
      'replay',
      `${got.length} tokens and ${bytes.length} bytes identical; log-probabilities ${l < 0 ? 'bit-identical' : `differ from token ${l} (another build)`}${drafted}`,
    )
  } finally {
    // A divergence leaves the loop early: the engine stops after its token, and must let go of the context first.
    await generation?.result.catch(() => {})
    draft?.dispose()
    ctx.dispose()
  }

  function describe(id: number): string {
    return `token ${id} ${quoted(tok.piece(id, {special: true}))}`
  }
}

/** The recorded prompt lookup's draft; settings out of range are the receipt's fault. */
function lookupDraft(recorded: Parameters<typeof Draft.lookup>[0], fail: Fail): Draft {
  try {
    return Draft.lookup(recorded)
  } catch (error) {
    return fail('settings', `config.draft: ${(error as Error).message}`)
  }
}

/** A recorded context whose KV cache could not fit this machine's memory is refused before any allocation. */
function kvProblem(gguf: GgufModelFiles, c: ParsedReceipt['config']): string | undefined {
  let plan
  try {
    plan = planModel(gguf)
  } catch (error) {
    return `the model cannot be planned: ${(error as Error).message}`
  }
  const m = plan.config
  const layers = m.attnRemoved.filter((removed) => !removed).length
  const bytes = 2 * layers * c.nCtx * m.nHeadKv * m.headDim * (c.kvType === 'f16' ? 2 : 4)
  return bytes > totalmem()
    ? `config.nCtx ${c.nCtx} needs a ${bytes} byte KV cache, more than this machine's ${totalmem()} bytes of memory`
    : undefined
}

function rangeProblem(name: string, v: number, min: number, max: number): string | undefined {
  return Number.isInteger(v) && v >= min && v <= max ? undefined : `${name} ${v} is outside [${min}, ${max}]`
}

function firstDifference<T>(a: readonly T[], b: readonly T[]): number {
  const n = Math.max(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i
  return -1
}

const hexAt = (b: Buffer, i: number) => (i < b.length ? b.subarray(i, i + 1).toString('hex') : 'end')

/**
 * The adapters given must be the receipt's, one for one and in its order (the deltas are added in
 * order): same bytes and sha256; the scales are the receipt's. A receipt made without adapters
 * replayed with some, or one made with adapters replayed without them, is UNVERIFIABLE.
 */
async function checkAdapters(
  recorded: NonNullable<ReceiptBody['model']['adapters']>,
  paths: readonly string[],
  fail: Fail,
): Promise<LoraSpec[]> {
  if (recorded.length !== paths.length)
    fail(
      'model',
      recorded.length === 0
        ? `the receipt was made without LoRA adapters, ${paths.length} given with --lora`
        : `the receipt was made with ${recorded.length} LoRA adapter(s) (${recorded.map((a) => a.name).join(', ')}); give each with --lora, in that order` +
            (paths.length > 0 ? ` (${paths.length} given)` : ''),
    )
  const specs: LoraSpec[] = []
  for (const [i, a] of recorded.entries()) {
    let sha: string
    try {
      sha = await sha256File(paths[i]!)
    } catch (error) {
      fail('model', `cannot read the adapter ${paths[i]!}: ${(error as Error).message}`)
    }
    if (sha !== a.sha256)
      fail('model', `wrong adapter: ${paths[i]!} has sha256 ${sha}, the receipt's adapter ${i + 1} is ${a.name} (${a.sha256})`)
    specs.push({path: paths[i]!, scale: a.scale})
  }
  return specs
}

/**
 * The model's signature: checked when the flags ask (a refusal is UNVERIFIABLE), and compared with
 * the one the receipt records (another signer's key is UNVERIFIABLE: not the recorded run's model).
 */
async function checkModelSignature(
  gguf: GgufModelFiles,
  recorded: ReceiptModelSignature | undefined,
  policy: SignaturePolicy | undefined,
  fail: Fail,
): Promise<{detail: string; verified?: VerifiedSignature}> {
  let verified: VerifiedSignature | undefined
  try {
    verified = policy
      ? await verifyModelSignature(
          gguf.shards.map((s) => s.path),
          policy,
        )
      : undefined
  } catch (error) {
    if (isSignatureRefusal(error)) fail('model', error.message)
    throw error
  }
  if (!verified)
    return {
      detail: recorded ? `; signed by key ${recorded.keyFingerprint} when recorded (not checked: pass --model-sig and --model-pubkey)` : '',
    }
  if (recorded && recorded.keyFingerprint !== verified.keyFingerprint)
    fail(
      'model',
      `the model is signed by key ${verified.keyFingerprint}, but the receipt was made with a model signed by ${recorded.keyFingerprint}`,
    )
  return {detail: `; signature verified (${verified.curve} key ${verified.keyFingerprint})`, verified}
}

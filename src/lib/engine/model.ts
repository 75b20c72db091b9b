import {resolve} from 'node:path'

import {
  camelCase,
  enumValue,
  isEnumField,
  MODEL_CONFIG_FIELDS,
  type ModelConfig,
  type ModelPlan,
  type NativeModelConfig,
  roleId,
  type RopeOverrides,
  withRopeOverrides,
} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {type GgufModelFiles, readGgufModel, shardPaths} from '../gguf/index.js'
import {bindLoraAdapter, type LoraAdapter, type LoraPairBinding, type LoraSpec, readLoraAdapter} from '../lora/index.js'
import {checkModel} from '../model-check/index.js'
import {checkMappedFiles, SIGNATURE_REFUSED, type SignaturePolicy, type VerifiedSignature, verifyModelSignature} from '../signing/index.js'
import type {Tokenizer} from '../tokenizer/index.js'
import {defaultThreads} from '../util/index.js'
import {abortFlags} from './abort-flags.js'
import {loadAddon, type NativeLoraPair, type NativeModelHandle, type NativeTensorDesc} from './addon.js'
import {Context, type ContextOptions} from './context.js'
import {defaultContextSize, MAX_BATCH_SIZE, MAX_CONTEXT_SIZE} from './context-size.js'
import {engineError} from './errors.js'

export interface LoadOptions {
  /** Bytes of weights made resident so far, and the total (called on the main thread). */
  readonly onProgress?: (done: number, total: number) => void
  /** Cancels the load (Ctrl+C while a large model is made resident): ENGINE_ABORTED, exit 130. */
  readonly signal?: AbortSignal
  /** LoRA adapters applied to every context of the model, in this order (docs/lora.md). */
  readonly lora?: readonly LoraSpec[]
  /** llama.cpp's --rope-* / --yarn-* overrides of what the file declares (docs/long-context.md). */
  readonly rope?: RopeOverrides
  /**
   * Check an OpenSSF Model Signing bundle (docs/model-signing.md) before anything of the model is
   * read or mapped, and each file's identity right after it is mapped; a refusal is exit 3 and the
   * model is never used. `model.signature` is what was verified.
   */
  readonly signature?: SignaturePolicy
  /** A signature already verified for this model (verifyModelSignature): only the after-mapping check runs. */
  readonly verifiedSignature?: VerifiedSignature
  /** Bytes of the model hashed for its signature so far, and the total. */
  readonly onHashProgress?: (done: number, total: number) => void
}

/** An adapter attached to a loaded model: what was asked, what the file holds, what it adapts. */
export interface AttachedAdapter {
  readonly spec: LoraSpec
  readonly adapter: LoraAdapter
  readonly pairs: readonly LoraPairBinding[]
}

/** What run --json, the server's capabilities and chat report of an attached adapter. */
export interface AdapterSummary {
  readonly path: string
  readonly scale: number
  /** adapter.lora.alpha (0: the file has none; the deltas are scaled by `scale` alone). */
  readonly alpha: number
  readonly ranks: readonly number[]
  /** Weights adapted, and the kinds (tensor names without the block). */
  readonly weights: number
  readonly targets: readonly string[]
}

export function adapterSummary(a: AttachedAdapter): AdapterSummary {
  return {
    path: a.spec.path,
    scale: a.spec.scale,
    alpha: a.adapter.alpha,
    ranks: [...new Set(a.pairs.map((p) => p.rank))].sort((x, y) => x - y),
    weights: a.pairs.length,
    targets: [...new Set(a.pairs.map((p) => p.target.replace(/^blk\.\d+\./, '').replace(/\.weight$/, '')))].sort(),
  }
}

/**
 * A loaded model: the GGUF header, the plan (config and tensor bindings), the tokenizer, and the
 * engine's handle to the weights, mapped in place. Loading runs on a worker thread.
 */
export class Model {
  private handle: NativeModelHandle | undefined

  private constructor(
    readonly gguf: GgufModelFiles,
    readonly plan: ModelPlan,
    readonly tokenizer: Tokenizer,
    handle: NativeModelHandle,
    /** LoRA adapters every context of this model applies (empty: the base model). */
    readonly adapters: readonly AttachedAdapter[] = [],
    /** The model signature checked at load (LoadOptions.signature); undefined: none was asked for. */
    readonly signature?: VerifiedSignature,
  ) {
    this.handle = handle
  }

  static async load(path: string, options: LoadOptions = {}): Promise<Model> {
    // The signature first: a forged bundle or a changed file is refused before the model's header is even parsed.
    const signature =
      options.verifiedSignature ??
      (options.signature
        ? await verifyModelSignature(shardPaths(path) ?? [path], options.signature, {onProgress: options.onHashProgress})
        : undefined)
    const gguf = readGgufModel(path)
    if (signature) checkSignedFiles(signature, gguf)
    // The checks quantize, remove-sublayer and inspect make too: one function, so they never disagree.
    const checked = checkModel(gguf)
    const {tokenizer} = checked
    const plan: ModelPlan = {...checked.plan, config: withRopeOverrides(checked.plan.config, options.rope)}
    // Adapters are read and matched to the plan before the (slow) load: a wrong one fails at once.
    const adapters = (options.lora ?? []).map((spec): AttachedAdapter => {
      const adapter = readLoraAdapter(spec.path)
      return {spec, adapter, pairs: bindLoraAdapter(adapter, plan)}
    })
    const addon = loadAddon()
    const flags = abortFlags(options.signal)
    let handle: NativeModelHandle | undefined
    try {
      handle = await addon.modelLoad(
        nativeConfig(plan.config),
        [...plan.files],
        plan.tensors.map(nativeTensor),
        options.onProgress,
        flags.array,
      )
      // The engine opened the paths itself: each must still be the file that was hashed.
      if (signature) await checkMappedFiles(signature.files)
      for (const a of adapters) addon.modelAddLora(handle, a.spec.path, a.pairs.map(nativeLoraPair), a.adapter.alpha, a.spec.scale)
      return new Model(gguf, plan, tokenizer, handle, adapters, signature)
    } catch (error) {
      if (handle) addon.modelFree(handle)
      throw engineError(error)
    } finally {
      flags.release()
    }
  }

  get config(): ModelConfig {
    return this.plan.config
  }

  /** The engine handle; refuses use after dispose. */
  get native(): NativeModelHandle {
    if (!this.handle) throw new RunnerError('MODEL_DISPOSED', 'the model has been disposed')
    return this.handle
  }

  async createContext(options: ContextOptions = {}): Promise<Context> {
    const nCtx = options.nCtx ?? defaultContextSize(this.config.nCtxTrain)
    const nBatch = Math.min(options.nBatch ?? 512, nCtx)
    const threads = options.threads ?? defaultThreads()
    const kvType = options.kvType ?? 'f16'
    const blocks = options.blocks ?? 'model'
    const check = (name: string, v: number, min: number, max: number) => {
      if (!Number.isInteger(v) || v < min || v > max)
        throw new RunnerError('CONTEXT_BAD_OPTION', `${name} ${v} must be an integer in [${min}, ${max}]`, ExitCode.usage)
    }
    check('context size', nCtx, 1, MAX_CONTEXT_SIZE)
    check('batch size', nBatch, 1, MAX_BATCH_SIZE)
    check('threads', threads, 1, 256)
    if (kvType !== 'f16' && kvType !== 'f32')
      throw new RunnerError('CONTEXT_BAD_OPTION', `kv type ${String(kvType)} must be f16 or f32`, ExitCode.usage)
    try {
      const swaFull = options.swaFull ?? false
      const handle = await loadAddon().contextCreate(this.native, {
        nCtx,
        nBatch,
        threads,
        kvType: kvType === 'f16' ? 1 : 0,
        blocks: blocks === 'mtp' ? 1 : 0,
        swaFull: swaFull ? 1 : 0,
      })
      return new Context(this, handle, {nCtx, nBatch, threads, kvType, blocks, swaFull})
    } catch (error) {
      throw engineError(error)
    }
  }

  /** Release the weights; contexts made from this model keep them mapped until they are disposed. */
  dispose(): void {
    if (this.handle) loadAddon().modelFree(this.handle)
    this.handle = undefined
  }
}

/**
 * A model's signature checked from its path alone, before its header is read (what Model.load does
 * first): for callers that read the header themselves before loading (run with a receipt, bench).
 * Pass the result to Model.load as `verifiedSignature`.
 */
export async function verifySignatureBeforeLoad(path: string, policy: SignaturePolicy | undefined): Promise<VerifiedSignature | undefined> {
  return policy ? verifyModelSignature(shardPaths(path) ?? [path], policy) : undefined
}

/** The files the signature covered must be the files the engine will map (the same shards, no other). */
function checkSignedFiles(signature: VerifiedSignature, gguf: GgufModelFiles): void {
  const signed = signature.files.map((f) => f.path).sort()
  const mapped = gguf.shards.map((s) => resolve(s.path)).sort()
  if (signed.length !== mapped.length || signed.some((p, i) => p !== mapped[i]))
    throw new RunnerError(
      SIGNATURE_REFUSED,
      `model signature refused: the signature covers ${signed.join(', ')} but the model is ${mapped.join(', ')}`,
      ExitCode.invalidModel,
    )
}

/**
 * runner_model_config from a ModelConfig (also used by tests that call the native loader directly):
 * one pass over runner.h's field table. Enum fields go as their C value, per-block flags as a
 * Uint8Array; an optional field that is absent stays absent (0 / NULL: not set).
 */
export function nativeConfig(c: ModelConfig): NativeModelConfig {
  const out: Record<string, number | Uint8Array | undefined> = {}
  for (const f of MODEL_CONFIG_FIELDS) {
    const v = c[camelCase(f.name)]
    if (v === undefined) continue
    if (typeof v === 'string') {
      if (!isEnumField(f.name))
        throw new RunnerError('ARCH_BAD_CONFIG', `config field ${f.name} has the name ${v} but is not an enum field`)
      out[f.name] = enumValue(f.name, v)
    } else {
      out[f.name] = typeof v === 'number' ? v : Uint8Array.from(v, Number)
    }
  }
  if (!isNativeModelConfig(out)) {
    const missing = MODEL_CONFIG_FIELDS.filter((f) => f.presence === 'REQUIRED' && out[f.name] === undefined).map((f) => camelCase(f.name))
    throw new RunnerError('ARCH_BAD_CONFIG', `the model config lacks ${missing.join(', ')}`)
  }
  return out
}

function isNativeModelConfig(o: Record<string, number | Uint8Array | undefined>): o is NativeModelConfig {
  return MODEL_CONFIG_FIELDS.every((f) => f.presence === 'OPTIONAL' || o[f.name] !== undefined)
}

/** runner_lora_pair_desc from a pair's binding. */
export function nativeLoraPair(p: LoraPairBinding): NativeLoraPair {
  return {
    role: roleId(p.role),
    layer: p.layer,
    aType: p.a.type,
    bType: p.b.type,
    aNe: p.a.shape,
    bNe: p.b.shape,
    aOffset: p.a.offset,
    aSize: p.a.size,
    bOffset: p.b.offset,
    bSize: p.b.size,
  }
}

/** runner_tensor_desc from a tensor binding. */
export function nativeTensor(t: ModelPlan['tensors'][number]): NativeTensorDesc {
  return {
    role: roleId(t.role),
    layer: t.layer,
    type: t.type.id,
    ne: [...t.shape],
    file: t.file,
    offset: t.offset,
    size: t.byteSize,
    ...(t.expert !== undefined ? {expert: t.expert} : {}),
  }
}

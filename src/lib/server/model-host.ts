/**
 * One served model, loaded: the weights, a context (KV cache) per slot, the decode group, drafts,
 * prompt workers, the scheduler, and the request environment the routes read. The fleet
 * (./fleet.ts) opens one when a model is first asked for and closes it when it unloads; closing
 * releases everything it holds (KV, drafts, adapters, mapped weights).
 */
import {availableParallelism} from 'node:os'

import type {RopeOverrides} from '../arch/index.js'
import {ChatTemplate} from '../chat/index.js'
import {adapterSummary, type Context, contextSize, DecodeGroup, Model, Session} from '../engine/index.js'
import type {LoraSpec} from '../lora/index.js'
import {type OpenedDrafts, openDrafts, type SpeculationOptions, type SpeculationStatus} from '../speculative/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {defaultBundlePath, modelSignatureSummary, SIGNATURE_REQUIRED} from '../signing/index.js'
import {toolFormatOf} from '../tools/index.js'
import {defaultThreads, printable, sha256File} from '../util/index.js'
import type {CatalogEntry} from './catalog.js'
import {embeddingCapabilities} from './embeddings.js'
import type {GenerationContext} from './generation.js'
import type {Metrics} from './metrics.js'
import {modelIds as ids, otherIds} from './model-ids.js'
import {PromptWorkers} from './prompt-work.js'
import {longestPieceBytes, type RequestLimits} from './request-limits.js'
import type {RequestEnv} from './requests.js'
import {Scheduler} from './scheduler.js'
import {thinkingSupport} from './thinking.js'

/** Heap of each prompt worker (MiB): a request that needs more to render or tokenize gets 413, alone. */
const PROMPT_WORKER_HEAP_MB = 1024

/** What every model of a server is opened with (the serve flags that shape slots). */
export interface HostSettings {
  readonly parallel: number
  readonly nCtx?: number
  readonly onWarning?: (message: string) => void
  readonly threadsPerSlot?: number
  readonly kvType: 'f16' | 'f32'
  readonly swaFull: boolean
  readonly contextShift?: {readonly keep: number}
  readonly queueLimit: number
  readonly prefixCache: boolean
  readonly batchDecode: boolean
  readonly speculation?: SpeculationOptions
  readonly lora?: readonly LoraSpec[]
  readonly rope?: RopeOverrides
  readonly chatTemplate?: string
  readonly acceptAnyModel: boolean
  readonly requestLimits: RequestLimits
  readonly systemFingerprint: string
  /** How many engine calls run at once (libuv's pool). */
  readonly concurrent: number
}

export interface ModelHost {
  readonly entry: CatalogEntry
  readonly model: Model
  readonly env: RequestEnv
  readonly generation: GenerationContext
  readonly scheduler: Scheduler
  /** The mapped files and every slot's KV cache (what the memory budget counts). */
  readonly bytes: number
  /** One slot's KV cache (/metrics' prefix-cache bytes). */
  readonly kvBytesPerSlot: number
  /** This model's part of /v1/capabilities (model, template, slots, speculation, prefix cache, its limits). */
  readonly capabilities: Record<string, unknown>
  readonly speculation: SpeculationStatus | undefined
  /** The slots' decode group (absent without batched decode), for /metrics. */
  readonly group?: DecodeGroup
  /** Refuse new work, wait for the slots to settle, release everything. */
  close(): Promise<void>
}

export async function openModelHost(entry: CatalogEntry, s: HostSettings, metrics: Metrics): Promise<ModelHost> {
  // A signature policy is checked before anything of the file is mapped (docs/model-signing.md).
  const sig = entry.signature
  if (sig?.publicKeyPath !== undefined && sig.bundlePath === undefined)
    throw new RunnerError(
      SIGNATURE_REQUIRED,
      `no signature bundle for this model: --model-pubkey is given, but neither --model-sig ${entry.id}=BUNDLE nor ${printable(defaultBundlePath(entry.path))} (what runner sign writes) exists`,
      ExitCode.invalidModel,
    )
  const model = await Model.load(entry.path, {
    lora: s.lora,
    rope: s.rope,
    ...(sig && (sig.bundlePath !== undefined || sig.require) ? {signature: sig} : {}),
  })
  const contexts: Context[] = []
  let group: DecodeGroup | undefined
  let drafted: OpenedDrafts | undefined
  let work: PromptWorkers | undefined
  const release = async () => {
    await work?.close()
    drafted?.dispose()
    for (const c of contexts) c.dispose()
    group?.dispose()
    model.dispose()
  }
  try {
    const template = ChatTemplate.forModel(model.gguf, model.tokenizer, s.chatTemplate)
    const nCtx = contextSize(s.nCtx, model.config, {name: '--ctx', onWarning: s.onWarning})
    const threadsPerSlot = s.threadsPerSlot ?? Math.max(1, Math.floor(defaultThreads() / s.parallel))
    for (let i = 0; i < s.parallel; i++)
      contexts.push(await model.createContext({nCtx, threads: threadsPerSlot, kvType: s.kvType, swaFull: s.swaFull}))
    // Refused by name before the model serves where a shift could not be exact (a sliding-window ring).
    if (s.contextShift) contexts[0]!.assertCanShift('--context-shift')
    // Prompts still run on their slot's own threads; the decode steps of every slot run together here.
    // Its threads: the slots' own budget when --threads gave one (threads x slots), else the physical cores.
    const groupThreads = Math.min(256, s.threadsPerSlot !== undefined ? s.threadsPerSlot * s.parallel : defaultThreads())
    if (s.batchDecode && s.parallel > 1) group = DecodeGroup.create(model, {threads: groupThreads, maxMembers: s.parallel})
    // A draft per slot (a generation holds its draft); a slot's generations with one decode outside the group.
    if (s.speculation)
      drafted = await openDrafts(model, s.speculation, {
        nCtx,
        kvType: s.kvType,
        threads: threadsPerSlot,
        count: s.parallel,
        ...(s.onWarning ? {onWarning: s.onWarning} : {}),
      })
    const modelIds = ids(entry.fileId, entry.aliases, s.acceptAnyModel)
    // Two workers, whatever the slots: a render that runs to its budget in one leaves the other for everyone else.
    work = new PromptWorkers(model.gguf, template, {workers: 2, heapMb: PROMPT_WORKER_HEAP_MB})
    await work.started()
    const env: RequestEnv = {
      modelId: modelIds.served,
      modelIds,
      systemFingerprint: s.systemFingerprint,
      tokenizer: model.tokenizer,
      template,
      work,
      nCtx,
      contextShift: s.contextShift !== undefined,
      limits: s.requestLimits,
    }
    // The template's capability probes, once, now: not inside the first request.
    toolFormatOf(template)
    thinkingSupport(env)
    const scheduler = new Scheduler(
      contexts.map((c, i) => new Session(c, group, drafted?.drafts[i])),
      {queueLimit: s.queueLimit, prefixCache: s.prefixCache},
    )
    scheduler.onAssign = (_slot, reused) => metrics.recordPrefix(reused)
    const kvBytes = contexts[0]!.kvBytes
    const bytes = entry.bytes + kvBytes * s.parallel
    const capabilities = {
      model: {
        id: modelIds.served,
        aliases: otherIds(modelIds),
        accept_any_model: modelIds.acceptAny,
        file: entry.path,
        architecture: model.config.architecture,
        n_ctx_train: model.config.nCtxTrain,
        n_vocab: model.config.nVocab,
        signature: model.signature ? modelSignatureSummary(model.signature) : null,
        adapters: await Promise.all(model.adapters.map(async (a) => ({...adapterSummary(a), sha256: await sha256File(a.spec.path)}))),
      },
      chat_template: {origin: template.origin, source: template.source},
      embeddings: embeddingCapabilities(model),
      slots: {
        parallel: s.parallel,
        n_ctx_per_slot: nCtx,
        threads_per_slot: threadsPerSlot,
        cpu_cores: availableParallelism(),
        concurrent_generations: s.concurrent,
        kv_type: s.kvType,
        kv_bytes_per_slot: kvBytes,
        kv_flat_bytes_per_slot: contexts[0]!.kvInfo.flatBytes,
        swa_ring_positions: contexts[0]!.kvInfo.ringPositions,
        context_shift: s.contextShift ? {keep: s.contextShift.keep} : false,
        batched_decode: group !== undefined,
        ...(group ? {batched_decode_threads: group.options.threads} : {}),
        scheduling:
          "each slot owns a context (its own KV cache) and runs its own native generation loop; prompts run on the slot's own threads " +
          '(threads_per_slot each). ' +
          (group
            ? "The slots' decode steps run together: each step evaluates the next token of every slot that has one in one forward pass " +
              '(one read of the weights), on batched_decode_threads threads. '
            : 'Decode steps of different slots run side by side, not batched (--parallel 1, or --no-batch-decode). ') +
          "A request's tokens do not depend on which slot runs it or what runs beside it.",
      },
      prefix_cache: {
        enabled: s.prefixCache,
        kind: 'slot-affinity',
        capacity_tokens: s.prefixCache ? nCtx * s.parallel : 0,
        capacity_bytes: s.prefixCache ? kvBytes * s.parallel : 0,
        eviction: 'least recently used slot',
        exact: true,
      },
      limits: {prompt_chars_per_slot: nCtx * longestPieceBytes(model.tokenizer), chat_template_budget: template.budget},
    }
    const generation: GenerationContext = {scheduler, metrics, ...(s.contextShift ? {contextShift: s.contextShift} : {})}
    let closing: Promise<void> | undefined
    return {
      entry,
      model,
      env,
      generation,
      scheduler,
      bytes,
      kvBytesPerSlot: kvBytes,
      capabilities,
      speculation: drafted?.status,
      ...(group ? {group} : {}),
      close() {
        closing ??= (async () => {
          scheduler.close()
          while (scheduler.busy > 0) await new Promise((resolve) => setTimeout(resolve, 5))
          await release()
        })()
        return closing
      },
    }
  } catch (error) {
    await release()
    throw error
  }
}

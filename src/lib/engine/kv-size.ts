/**
 * The KV cache's size for a config, as native/src/kv/kv_cache.c allocates it (a test checks the two
 * agree): per layer with attention, K and V of whole 32-position blocks; a sliding-window layer holds
 * a ring of ceil((nSwa - 1 + nBatch) / 32) blocks instead when that is fewer than the context's
 * (llama.cpp's --swa-full keeps them flat). `inspect` prints it; `run` reports the context's own.
 */
import type {ModelConfig} from '../arch/index.js'
import {formatBytes} from '../util/index.js'
import {defaultContextSize} from './context-size.js'

const BLOCK = 32

export interface KvCacheSize {
  /** As allocated. */
  readonly bytes: number
  /** With every layer flat (--swa-full). */
  readonly flatBytes: number
  /** Layers holding a ring, and the positions each ring holds (0: none). */
  readonly ringLayers: number
  readonly ringPositions: number
}

export interface KvCacheShape {
  readonly nCtx: number
  readonly nBatch: number
  readonly kvType: 'f16' | 'f32'
  readonly swaFull?: boolean
}

export function kvCacheSize(config: ModelConfig, shape: KvCacheShape): KvCacheSize {
  const blocks = Math.ceil(shape.nCtx / BLOCK)
  const window = config.nSwa ?? 0
  const wanted = window > 0 && !shape.swaFull ? Math.ceil((window - 1 + Math.min(shape.nBatch, shape.nCtx)) / BLOCK) : 0
  const ringBlocks = wanted > 0 && wanted < blocks ? wanted : 0
  const perBlock = BLOCK * 2 * config.nHeadKv * config.headDim * (shape.kvType === 'f16' ? 2 : 4)
  let held = 0
  let flat = 0
  let ringLayers = 0
  for (let l = 0; l < config.nLayer; l++) {
    if (config.attnRemoved[l]) continue
    const ring = ringBlocks > 0 && config.swaLayers?.[l] === true
    ringLayers += ring ? 1 : 0
    held += ring ? ringBlocks : blocks
    flat += blocks
  }
  return {bytes: held * perBlock, flatBytes: flat * perBlock, ringLayers, ringPositions: ringLayers > 0 ? ringBlocks * BLOCK : 0}
}

/** "KV 144 KiB (SWA ring of 32 positions on 2 layers; flat 256 KiB)", or "KV 256 KiB": run's summary, inspect's line. */
export function describeKv(kv: KvCacheSize): string {
  if (kv.ringLayers === 0) return `KV ${formatBytes(kv.bytes)}`
  return `KV ${formatBytes(kv.bytes)} (SWA ring of ${kv.ringPositions} positions on ${kv.ringLayers} layers; flat ${formatBytes(kv.flatBytes)})`
}

/** The KV cache of a default context (the training context, at most 4096; batch 512; F16): inspect's memory figure. */
export function defaultKvFigures(config: ModelConfig): KvCacheShape & KvCacheSize {
  const shape = {nCtx: defaultContextSize(config.nCtxTrain), nBatch: 512, kvType: 'f16' as const}
  return {...shape, ...kvCacheSize(config, shape)}
}

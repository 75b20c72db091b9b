import {Flags} from '@oclif/core'

/** The model file flag of every command that loads one. */
export const modelFlag = {
  model: Flags.string({char: 'm', description: 'GGUF model file (or any shard of a split model)', required: true, helpValue: 'FILE'}),
}

/** The context flags run and chat share, named as llama.cpp names them. */
export const contextFlags = {
  'ctx-size': Flags.integer({char: 'c', description: "context size in tokens (default: the model's, at most 4096)", min: 1}),
  'batch-size': Flags.integer({char: 'b', description: 'tokens per forward step while reading a prompt', default: 512, min: 1}),
  threads: Flags.integer({char: 't', description: 'threads (default: physical cores, at most 32)', min: 1, max: 256}),
  'kv-type': Flags.string({description: 'KV cache type', options: ['f16', 'f32'], default: 'f16'}),
}

export interface ContextFlagValues {
  readonly 'ctx-size'?: number
  readonly 'batch-size': number
  readonly threads?: number
  readonly 'kv-type': string
}

/** The context options those flags give (the kv type is one of the flag's options). */
export function contextFromFlags(flags: ContextFlagValues): {nCtx?: number; nBatch: number; threads?: number; kvType: 'f16' | 'f32'} {
  return {nCtx: flags['ctx-size'], nBatch: flags['batch-size'], threads: flags.threads, kvType: flags['kv-type'] as 'f16' | 'f32'}
}

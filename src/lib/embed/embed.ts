/**
 * Embedding a list of inputs with a model: each input is tokenized as llama.cpp's embedding path
 * tokenizes it (BOS and EOS as the vocabulary asks), evaluated as a fresh sequence from position 0
 * on one session (the engine returns every token's state after the output norm, without the LM
 * head), pooled and normalised. Evaluation runs on libuv's pool (Context.hiddenStates), so the event
 * loop stays free; inputs run one after another, and each vector depends only on its own tokens.
 */
import type {Session} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import type {Tokenizer} from '../tokenizer/index.js'
import {modelPooling, normalize, pool, type Pooling} from './pooling.js'

/** A text, or token ids used as they are (no BOS or EOS added). */
export type EmbedInput = string | readonly number[]

/** An input refused before anything is evaluated; `index` is its place in the list. */
export class EmbedInputError extends RunnerError {
  constructor(
    readonly index: number,
    message: string,
    code = 'EMBED_BAD_INPUT',
  ) {
    super(code, message, ExitCode.usage)
  }
}

/**
 * The tokens of each input, checked: none empty, every id in the vocabulary, none longer than the
 * context (`nCtx` positions). Texts get BOS and EOS as the vocabulary asks (tokenizer.ggml.add_bos_token
 * / add_eos_token, llama.cpp's add_special), and special-token text stays text, as node-llama-cpp's
 * embedding context and `runner run` tokenize it.
 */
export function embeddingTokens(
  tokenizer: Tokenizer,
  inputs: readonly EmbedInput[],
  nCtx: number,
  name: (index: number) => string = (i) => `input ${i + 1}`,
): number[][] {
  return inputs.map((input, i) => {
    if (input.length === 0) throw new EmbedInputError(i, `${name(i)} is empty`)
    if (typeof input !== 'string') {
      input.forEach((id, j) => {
        if (!Number.isInteger(id) || id < 0 || id >= tokenizer.vocabSize)
          throw new EmbedInputError(i, `${name(i)}: token ${j} = ${id} is not a token id (the vocabulary has ${tokenizer.vocabSize})`)
      })
    }
    const tokens = typeof input === 'string' ? tokenizer.encode(input, {addSpecial: true, parseSpecial: false}) : [...input]
    // A vocabulary that adds neither BOS nor EOS can tokenize some text to nothing.
    if (tokens.length === 0) throw new EmbedInputError(i, `${name(i)} has no tokens`)
    if (tokens.length > nCtx)
      throw new EmbedInputError(
        i,
        `${name(i)} has ${tokens.length} tokens, more than the context of ${nCtx}; shorten it or use a larger context`,
        'EMBED_INPUT_TOO_LONG',
      )
    return tokens
  })
}

export interface EmbedOptions {
  /** Default: the model's own (`<arch>.pooling_type`), else mean. */
  readonly pooling?: Pooling
  /** Scale each vector to unit length (default true, as llama.cpp's OpenAI endpoint does). */
  readonly normalize?: boolean
  /** Stops the evaluation (ENGINE_ABORTED). */
  readonly signal?: AbortSignal
}

export interface EmbedResult {
  /** One vector of `dimensions` floats per input, in input order. */
  readonly embeddings: Float32Array[]
  /** Tokens each input was evaluated as (BOS and EOS included). */
  readonly tokenCounts: number[]
  readonly pooling: Pooling
  readonly normalized: boolean
  /** The model's n_embd. */
  readonly dimensions: number
}

/** The pooling an embedding of this session's model uses when `requested` is not given. */
export function resolvePooling(session: Session, requested?: Pooling): Pooling {
  const m = session.context.model
  return requested ?? modelPooling(m.gguf, m.config.architecture).pooling
}

/** Embed token lists (from embeddingTokens) on a session, one fresh sequence each. */
export async function embedTokens(
  session: Session,
  inputs: readonly (readonly number[])[],
  options: EmbedOptions = {},
): Promise<EmbedResult> {
  const pooling = resolvePooling(session, options.pooling)
  const normalized = options.normalize ?? true
  const width = session.context.model.config.nEmbd
  const embeddings: Float32Array[] = []
  for (const tokens of inputs) {
    // A raised signal stops the engine at its next layer (ENGINE_ABORTED), before or during an input.
    const states = await session.hiddenStates(tokens, options.signal)
    const v = pool(states, tokens.length, width, pooling)
    embeddings.push(normalized ? normalize(v) : v)
  }
  return {embeddings, tokenCounts: inputs.map((t) => t.length), pooling, normalized, dimensions: width}
}

/** Tokenize (embeddingTokens, against the session's context) and embed. */
export async function embed(session: Session, inputs: readonly EmbedInput[], options: EmbedOptions = {}): Promise<EmbedResult> {
  const ctx = session.context
  return embedTokens(session, embeddingTokens(ctx.model.tokenizer, inputs, ctx.options.nCtx), options)
}

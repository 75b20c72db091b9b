/**
 * The library's model (`import {loadModel} from 'runner-llm'`): one loaded GGUF file and one
 * context (KV cache) that its calls share through a Session, so a prompt that extends the last one
 * reuses its cached prefix. Each call wraps the function the matching command calls (generate() for
 * run, ChatTemplate for chat and serve, scoreTokens for score, embed for embed); calls run one at a
 * time, in the order they were made, since one context runs one generation at a time. Decoding runs
 * on the engine's native threads; tokenizing and template rendering are on the caller's thread.
 */
import type {RopeOverrides} from '../arch/index.js'
import {BUILTIN_TEMPLATES, type ChatMessage, ChatTemplate, encodeChatPrompt, validateHistory} from '../chat/index.js'
import {type EmbedInput, type EmbedResult, embed} from '../embed/index.js'
import type {Pooling} from '../embed/index.js'
import {type Context, defaultContextSize, type LoadOptions, Model, Session} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {fitPrompt, generate, type Generation} from '../generate/index.js'
import {resolveModelPath} from '../models/index.js'
import {resolveSamplingOptions, type SamplingInput} from '../sampling/index.js'
import {type ScoreResult, scoreTokens} from '../score/index.js'
import {modelSignatureSummary, type ModelSignatureSummary, type SignaturePolicy} from '../signing/index.js'
import {type OpenedDrafts, openDrafts, type SpeculationOptions} from '../speculative/index.js'
import {encodePrompt} from '../tokenizer/index.js'
import {type GenerateResult, TextStream} from './text-stream.js'

/** Options of {@link loadModel}. */
export interface LoadModelOptions {
  /** KV cache positions shared by generate, chat and embed (default: the model's training context, at most 4096). */
  readonly contextSize?: number
  /** Most tokens one forward step processes (default 512). */
  readonly batchSize?: number
  /** Engine threads (default: physical cores, at most 32). */
  readonly threads?: number
  /** KV cache precision (default `f16`; `f32` is what llama.cpp's reference figures used). */
  readonly kvType?: 'f16' | 'f32'
  /** LoRA adapters (llama.cpp's GGUF format) applied in order; scale defaults to 1. */
  readonly lora?: readonly {readonly path: string; readonly scale?: number}[]
  /**
   * Rope scaling overrides, llama.cpp's --rope-scaling, --rope-freq-base, --rope-freq-scale (1 / --rope-scale),
   * --yarn-orig-ctx, --yarn-ext-factor, --yarn-attn-factor, --yarn-beta-fast, --yarn-beta-slow: each replaces
   * what the file declares (docs/long-context.md). Example: `{scaling: 'yarn', freqScale: 0.25, yarnOrigCtx: 4096}`.
   */
  readonly rope?: RopeOverrides
  /**
   * Speculative decoding for every generation (docs/speculative.md): `{source: 'lookup'}` (prompt
   * lookup; `nMax`, `ngramMin`, `ngramMax`) or `{source: 'model', path}` (a draft model of the same
   * vocabulary; `nMax`, `pMin`, `threads`). The output is exactly the same, only the speed differs.
   * A draft that cannot be used is refused (the load fails) unless `required: false`, which drops it.
   */
  readonly speculation?: SpeculationOptions
  /** Sliding-window layers keep every position (llama.cpp's --swa-full) instead of a ring of their window (default false). */
  readonly swaFull?: boolean
  /** Cancels the load (a RunnerError with code ENGINE_ABORTED). */
  readonly signal?: AbortSignal
  /** Bytes of weights mapped so far, of all. */
  readonly onProgress?: (done: number, total: number) => void
  /**
   * Check an OpenSSF Model Signing bundle before the model is mapped (docs/model-signing.md):
   * `{bundlePath, publicKeyPath}` (ECDSA P-256/384/521 PEM), and `require: true` to refuse a model
   * without one. A refusal rejects with a RunnerError, code MODEL_SIGNATURE_*; `info.signature` is what was verified.
   */
  readonly signature?: SignaturePolicy
}

/**
 * Options of one generation: the sampling fields (`temperature`, `topK`, `topP`, `minP`, `seed`,
 * the penalties, `logitBias`; defaults as `runner run`'s flags) and how it ends and streams.
 */
export interface GenerateOptions extends SamplingInput {
  /** Most tokens to generate (default: until end of text or a full context). */
  readonly maxTokens?: number
  /** Text that ends the generation; the result stops before it. */
  readonly stop?: readonly string[]
  /** Ends the generation (finish reason `aborted`, keeping what was generated). */
  readonly signal?: AbortSignal
  /** Called with each chunk of text as it becomes final. */
  readonly onText?: (text: string) => void
  /**
   * llama.cpp's --context-shift: when the context is full, the first `keep` tokens of the sequence stay
   * (BOS included; at most the context size - 4), half of the rest goes and the generation continues
   * (docs/long-context.md). Refused (CONTEXT_SHIFT_UNSUPPORTED) where it cannot be exact.
   */
  readonly contextShift?: {readonly keep: number}
}

/** Options of {@link RunnerModel.generate} and {@link RunnerModel.stream}: a raw prompt's tokenization too. */
export interface PromptOptions extends GenerateOptions {
  /** Put the BOS token first when the vocabulary asks for it (default true, as `runner run`). */
  readonly addBos?: boolean
  /** Read special-token text such as `<|im_start|>` as those tokens (default false). */
  readonly parseSpecial?: boolean
}

/** Options of {@link RunnerModel.chat}. */
export interface ChatOptions extends GenerateOptions {
  /**
   * The chat template: a built-in name as llama.cpp names them (`chatml`, `llama3`, `gemma`, `mistral-v7`…),
   * or the text of a Jinja template (as `--chat-template`). Default:
   * the model's own (`tokenizer.chat_template`), ChatML when it has none.
   */
  readonly template?: string
}

/** What {@link RunnerModel.chat} returns: the generation, and the prompt the template rendered. */
export interface ChatResult extends GenerateResult {
  readonly prompt: string
}

/** Options of {@link RunnerModel.score}. */
export interface ScoreOptions {
  /** The window, in tokens (default 512, at most the model's training context), as `runner score --ctx`. */
  readonly contextSize?: number
  /** Tokens between window starts (default: the window), as `--stride`. */
  readonly stride?: number
  /** Stops scoring at the engine's next layer (ENGINE_ABORTED). */
  readonly signal?: AbortSignal
}

/** Options of {@link RunnerModel.embed}. */
export interface EmbedOptions {
  /** `mean`, `cls`, `last` or `none`... (default: the model's own `<arch>.pooling_type`, else mean). */
  readonly pooling?: Pooling
  /** Scale each vector to unit length (default true). */
  readonly normalize?: boolean
  readonly signal?: AbortSignal
}

/** What the model is, from its GGUF header. */
export interface ModelInfo {
  readonly path: string
  readonly architecture: string
  readonly vocabularySize: number
  readonly embeddingSize: number
  readonly trainContextSize: number
  /** The context generate, chat and embed share. */
  readonly contextSize: number
  /** Bytes of its KV cache (sliding-window layers hold a ring of their window unless swaFull). */
  readonly kvCacheBytes: number
  /** The model signature verified at load (`signature` option): the signer's key fingerprint, curve, bundle and files. */
  readonly signature?: ModelSignatureSummary
}

/** The default window of {@link RunnerModel.score} (`runner score`'s --ctx default). */
const DEFAULT_SCORE_WINDOW = 512

/**
 * Load a GGUF model (checked as every command checks it) and make its context. `path` is a file, or
 * the name of a model in the models folder (`runner pull`, `runner list`), as the CLI's -m takes it. The weights are
 * mapped on a worker thread; the promise resolves when both are ready. Dispose of it when done
 * (`await model.dispose()`, or `await using model = await loadModel(...)`).
 *
 * @example
 * const model = await loadModel('stories260K.gguf')
 * try {
 *   const {text} = await model.generate('Once upon a time', {maxTokens: 8, temperature: 0})
 * } finally {
 *   await model.dispose()
 * }
 */
export async function loadModel(path: string, options: LoadModelOptions = {}): Promise<RunnerModel> {
  const lora = (options.lora ?? []).map((a) => ({path: a.path, scale: a.scale ?? 1}))
  const load: LoadOptions = {
    lora,
    ...(options.rope ? {rope: options.rope} : {}),
    ...(options.signal ? {signal: options.signal} : {}),
    ...(options.onProgress ? {onProgress: options.onProgress} : {}),
    ...(options.signature ? {signature: options.signature} : {}),
  }
  const model = await Model.load(await resolveModelPath(path, 'loadModel'), load)
  try {
    const nCtx = options.contextSize ?? defaultContextSize(model.config.nCtxTrain)
    const context = await model.createContext({
      nCtx,
      nBatch: options.batchSize,
      threads: options.threads,
      kvType: options.kvType,
      swaFull: options.swaFull ?? false,
    })
    const s = options.speculation
    const drafts = s
      ? await openDrafts(
          model,
          {...s, required: s.required ?? true},
          {nCtx, kvType: context.options.kvType, threads: context.options.threads},
        ).catch((error: unknown) => {
          context.dispose()
          throw error
        })
      : undefined
    return new RunnerModel(path, model, context, options, drafts)
  } catch (error) {
    model.dispose()
    throw error
  }
}

/** A loaded model and its context. Made by {@link loadModel}. */
export class RunnerModel {
  private readonly session: Session
  /** The tail of the queue of calls: each waits for the one before it. */
  private queue: Promise<unknown> = Promise.resolve()
  private disposed = false
  private disposal: Promise<void> | undefined
  private ownTemplate: ChatTemplate | undefined

  /** @internal Use {@link loadModel}. */
  constructor(
    private readonly path: string,
    private readonly model: Model,
    private readonly context: Context,
    private readonly options: LoadModelOptions,
    private readonly drafts?: OpenedDrafts,
  ) {
    this.session = new Session(context, undefined, drafts?.drafts[0])
  }

  /** What the model is, from its GGUF header. */
  get info(): ModelInfo {
    const c = this.model.config
    return {
      path: this.path,
      architecture: c.architecture,
      vocabularySize: this.model.tokenizer.vocabSize,
      embeddingSize: c.nEmbd,
      trainContextSize: c.nCtxTrain,
      contextSize: this.context.options.nCtx,
      kvCacheBytes: this.context.kvBytes,
      ...(this.model.signature ? {signature: modelSignatureSummary(this.model.signature)} : {}),
    }
  }

  /** The token ids of `text` (BOS first when the vocabulary asks and `addBos` is not false). */
  tokenize(text: string, options: {readonly addBos?: boolean; readonly parseSpecial?: boolean} = {}): number[] {
    this.checkLive()
    return encodePrompt(this.model.tokenizer, text, {addBos: options.addBos ?? true, parseSpecial: options.parseSpecial ?? false})
  }

  /** The text of token ids. */
  detokenize(tokens: readonly number[]): string {
    this.checkLive()
    return this.model.tokenizer.decode(tokens)
  }

  /**
   * Continue `prompt` and return the whole result (onText sees the text as it comes).
   *
   * @example
   * const {text, finishReason} = await model.generate('Once upon a time', {maxTokens: 8, temperature: 0})
   */
  async generate(prompt: string, options: PromptOptions = {}): Promise<GenerateResult> {
    return this.stream(prompt, options).finish()
  }

  /**
   * Continue `prompt`, streaming: iterate the returned stream for the text, await its `result` for
   * the outcome. Breaking out of the loop stops the generation.
   *
   * @example
   * const stream = model.stream('Once upon a time', {maxTokens: 8})
   * for await (const chunk of stream) process.stdout.write(chunk)
   * const {finishReason} = await stream.result
   */
  stream(prompt: string, options: PromptOptions = {}): TextStream {
    const {addBos, parseSpecial, ...rest} = options
    return this.start(() => this.tokenize(prompt, {addBos: addBos ?? true, parseSpecial: parseSpecial ?? false}), rest, 'prompt')
  }

  /**
   * Answer a chat history with the model's chat template (or `options.template`): the messages are
   * checked as `/v1/chat/completions` checks them (roles `system`, `user`, `assistant`, `tool`),
   * rendered with the generation prompt, and the reply generated. The history is not kept: pass the
   * whole conversation each time (the cached prefix is reused, so only the new turn is evaluated).
   *
   * @example
   * const reply = await model.chat([{role: 'user', content: 'Hello'}], {maxTokens: 16})
   */
  async chat(messages: readonly ChatMessage[], options: ChatOptions = {}): Promise<ChatResult> {
    this.checkLive()
    const {template, ...rest} = options
    const history = validateHistory(messages, 'messages')
    const rendered = this.template(template).render(history, {addGenerationPrompt: true})
    const result = await this.start(() => encodeChatPrompt(this.model.tokenizer, rendered), rest, 'messages').finish()
    return {...result, prompt: rendered}
  }

  /**
   * Perplexity of `text` by llama-perplexity's scheme (`runner score`): windows of `contextSize`
   * tokens, each from an empty cache, the second half of each scored. Runs on its own context.
   *
   * @example
   * const {ppl, nllMean} = await model.score(corpus, {contextSize: 128})
   */
  async score(text: string, options: ScoreOptions = {}): Promise<ScoreResult> {
    this.checkLive()
    const window = options.contextSize ?? Math.min(DEFAULT_SCORE_WINDOW, this.model.config.nCtxTrain)
    if (!Number.isInteger(window) || window < 2 || window > this.model.config.nCtxTrain)
      throw new RunnerError(
        'SCORE_CTX_TOO_LARGE',
        `contextSize ${String(window)} must be an integer from 2 to the model's context of ${this.model.config.nCtxTrain}`,
        ExitCode.usage,
      )
    if (text.length === 0) throw new RunnerError('SCORE_EMPTY_CORPUS', 'the text to score is empty', ExitCode.usage)
    return this.exclusive(async () => {
      const tok = this.model.tokenizer
      const tokens = tok.encode(text, {addSpecial: true, parseSpecial: false})
      const batch = Math.min(this.context.options.nBatch, window)
      const ctx = await this.model.createContext({nCtx: window, nBatch: batch, threads: this.options.threads, kvType: this.options.kvType})
      try {
        const result = await scoreTokens(ctx, tokens, {
          ctx: window,
          ...(options.stride === undefined ? {} : {stride: options.stride}),
          bos: tok.addBos ? tok.bos : undefined,
          ...(options.signal ? {signal: options.signal} : {}),
        })
        // scoreTokens keeps the windows scored before an abort (runner score reports them); here an abort is an error, as documented.
        if (result.partial) throw new RunnerError('ENGINE_ABORTED', 'scoring was aborted', ExitCode.interrupted)
        return result
      } finally {
        ctx.dispose()
      }
    })
  }

  /**
   * Embeddings of texts (or token lists), pooled and normalised as `runner embed` and
   * POST /v1/embeddings make them.
   *
   * @example
   * const {embeddings, dimensions} = await model.embed(['a cat', 'a dog'])
   */
  async embed(inputs: readonly EmbedInput[], options: EmbedOptions = {}): Promise<EmbedResult> {
    this.checkLive()
    return this.exclusive(() => embed(this.session, inputs, options))
  }

  /** Wait for the calls in progress, then free the context and the weights. Later calls are refused. */
  dispose(): Promise<void> {
    // A second call (an explicit dispose inside `await using`) waits for the same release.
    this.disposal ??= (async () => {
      this.disposed = true
      await this.queue.catch(() => {})
      this.drafts?.dispose()
      this.context.dispose()
      this.model.dispose()
    })()
    return this.disposal
  }

  /** `await using model = await loadModel(...)` disposes of it at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose()
  }

  /** The template for `override` (undefined: the model's own, made once). */
  private template(override: string | undefined): ChatTemplate {
    // A built-in name (llama3, gemma…) means its template, as --chat-template NAME does; anything else is Jinja source.
    if (override !== undefined)
      return ChatTemplate.forModel(
        this.model.gguf,
        this.model.tokenizer,
        Object.hasOwn(BUILTIN_TEMPLATES, override) ? BUILTIN_TEMPLATES[override]! : override,
      )
    this.ownTemplate ??= ChatTemplate.forModel(this.model.gguf, this.model.tokenizer)
    return this.ownTemplate
  }

  /**
   * Check the options and the prompt now (so a bad one throws at the call), and start the
   * generation once the calls before it have finished.
   */
  private start(encode: () => number[], options: GenerateOptions, field: string): TextStream {
    this.checkLive()
    const {maxTokens, stop, signal, onText, contextShift, ...samplingInput} = options
    if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || maxTokens < 0))
      throw new RunnerError('LIBRARY_BAD_OPTION', `maxTokens must be an integer >= 0, got ${String(maxTokens)}`, ExitCode.usage)
    if (contextShift !== undefined && (!Number.isInteger(contextShift.keep) || contextShift.keep < 0))
      throw new RunnerError(
        'LIBRARY_BAD_OPTION',
        `contextShift.keep must be an integer >= 0, got ${String(contextShift.keep)}`,
        ExitCode.usage,
      )
    const sampling = resolveSamplingOptions(samplingInput)
    const prompt = encode()
    const nCtx = this.context.options.nCtx
    if (!fitPrompt(prompt.length, nCtx, 1).fits)
      throw new RunnerError(
        'PROMPT_TOO_LONG',
        `${field} is ${prompt.length} tokens but the context holds ${nCtx}; raise contextSize (at most the model's ${this.model.config.nCtxTrain}) or shorten ${field}`,
        ExitCode.usage,
      )
    const previous = this.queue
    let begin!: () => void
    const turn = new Promise<void>((resolve) => (begin = resolve))
    const generation = deferredGeneration(turn, () =>
      generate(this.session, {
        prompt,
        maxTokens: maxTokens ?? nCtx,
        sampling,
        ...(stop ? {stop} : {}),
        ...(signal ? {signal} : {}),
        ...(contextShift ? {contextShift: {keep: contextShift.keep}} : {}),
      }),
    )
    const stream = new TextStream(generation, onText)
    this.queue = stream.result.catch(() => {})
    void previous.catch(() => {}).then(begin)
    return stream
  }

  /** Run `work` once the calls before it have finished. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.catch(() => {}).then(work)
    this.queue = run.catch(() => {})
    return run
  }

  private checkLive(): void {
    if (this.disposed) throw new RunnerError('MODEL_DISPOSED', 'the model has been disposed', ExitCode.usage)
  }
}

/**
 * A Generation whose engine work starts when `turn` resolves (the model's earlier calls are done):
 * its events and result are those of the real one once it has started.
 */
function deferredGeneration(turn: Promise<void>, begin: () => Generation): Generation {
  let real: Generation | undefined
  let stopRequested = false
  const started = turn.then(() => {
    real = begin()
    if (stopRequested) real.events.stop()
    return real
  })
  return {
    cachedTokens: 0,
    result: started.then((g) => g.result),
    events: {
      stop() {
        stopRequested = true
        real?.events.stop()
      },
      async *[Symbol.asyncIterator]() {
        yield* (await started).events
      },
    },
  }
}

/**
 * One chat conversation over a model, independent of any screen: the system prompt, the turns, the
 * sampling values, and the rules for what happens when the conversation outgrows the context. The
 * Ink UI and the line-by-line mode both drive this class.
 *
 * Every turn renders the whole history through the chat template (src/lib/chat) and hands the tokens
 * to the generation loop (src/lib/generate) on a Session, which reuses the KV rows of the longest
 * common prefix with what the cache holds: in a growing conversation that is everything up to the new
 * user message, so only the new turn is evaluated (the number reused is reported as `cachedTokens`).
 */
import {readFile, writeFile} from 'node:fs/promises'

import {type ChatMessage, type ChatTemplate, encodeChatPrompt, validateHistory} from '../chat/index.js'
import {commonPrefixLength, type Draft, type Session} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {fitPrompt, type FinishReason, generate, type GenerationEvents, keptTokens} from '../generate/index.js'
import type {Tokenizer} from '../tokenizer/index.js'
import type {Constraint} from '../grammar/index.js'
import {type SpeculationReport, type SpeculationStatus, speculationReport} from '../speculative/index.js'
import type {ChatParams} from './params.js'

export interface ConversationOptions {
  readonly tokenizer: Tokenizer
  readonly template: ChatTemplate
  readonly session: Session
  /** Context size of the session's KV cache. */
  readonly nCtx: number
  /** Drop the oldest turns when a new one does not fit (otherwise refuse it and say so). */
  readonly contextShift: boolean
  /**
   * A reply that fills the context shifts it (llama.cpp's --context-shift) instead of ending: the
   * system prompt stays, half of what follows it goes. Off where the context cannot shift exactly.
   */
  readonly replyShift?: boolean
  readonly params: ChatParams
  readonly system?: string
  /** Written into saved files as "model". */
  readonly modelName: string
  /** Every reply is a document of this constraint (chat --json-schema/--grammar/--json-object). */
  readonly constraint?: Constraint
  /** Speculative decoding for every reply (the replies are those without it), and what to report of it. */
  readonly draft?: {readonly draft: Draft | undefined; readonly status: SpeculationStatus}
}

/** The message and the room its reply needs do not fit in the context; nothing was changed. */
export class ChatContextFullError extends RunnerError {
  constructor(
    message: string,
    readonly promptTokens: number,
    readonly reserve: number,
    readonly nCtx: number,
  ) {
    super('CHAT_CONTEXT_FULL', message, ExitCode.usage)
  }
}

export interface TurnPlan {
  /** The history the prompt renders: system, the turns kept, the new user message. */
  readonly messages: readonly ChatMessage[]
  /** What the chat template rendered. */
  readonly rendered: string
  /** Its tokens (encodeChatPrompt). */
  readonly prompt: readonly number[]
  /** Earlier messages dropped to make room (--context-shift); 0 otherwise. */
  readonly dropped: number
  /** Tokens kept free for the reply. */
  readonly reserve: number
}

export interface TurnResult {
  /** The reply as generated (also when it was stopped part-way). */
  readonly reply: string
  readonly tokens: readonly number[]
  readonly finishReason: FinishReason
  /** False when the turn was stopped before any token: it is not added to the conversation. */
  readonly kept: boolean
  readonly promptTokens: readonly number[]
  /** Prompt tokens reused from the KV cache. */
  readonly cachedTokens: number
  /** Prompt tokens evaluated (the new part). */
  readonly evaluatedTokens: number
  readonly promptMs: number
  readonly decodeMs: number
  /** KV positions in use after the turn. */
  readonly contextUsed: number
  readonly dropped: number
  /** Context shifts the reply made (replyShift), and the tokens they dropped. */
  readonly shifts: {readonly count: number; readonly discarded: number}
  /** The sampling seed of the reply (random unless --seed or /params set it). */
  readonly seed: bigint
  /** The -n this reply ran under (-1: none), so a reply cut by it can say which limit it was. */
  readonly maxTokens: number
  /** With speculative decoding (--draft, --draft-lookup): the source and what it drafted and got accepted. */
  readonly speculation?: SpeculationReport
}

export interface ChatTurn {
  readonly plan: TurnPlan
  /** The reply as it is generated: one event per token (`token`, `text`); `stop()` ends it. */
  readonly stream: GenerationEvents
  readonly cachedTokens: number
  readonly result: Promise<TurnResult>
}

/** A saved conversation: a Chat Completions request body without the sampling fields. */
export interface SavedConversation {
  readonly model: string
  readonly messages: ChatMessage[]
}

export class ChatConversation {
  system: string | undefined
  params: ChatParams
  /** The result of the last turn that ran (the status line shows its speeds). */
  last: TurnResult | undefined
  private turns: ChatMessage[] = []
  /** The turn being generated: its stop switch and its end (the context must outlive it). */
  private active: {abort: AbortController; done: Promise<unknown>} | undefined

  constructor(readonly options: ConversationOptions) {
    this.system = options.system === '' ? undefined : options.system
    this.params = options.params
  }

  /** The whole history in OpenAI message form, system first. */
  messages(): ChatMessage[] {
    return [...(this.system === undefined ? [] : [{role: 'system' as const, content: this.system}]), ...this.turns]
  }

  /** KV positions the cache holds. */
  get contextUsed(): number {
    return this.options.session.cached.length
  }

  /**
   * Tokens kept free for a reply: -n when it is set, else a quarter of the context (at most 256). A
   * reply that may shift the context (replyShift) needs no more room than that quarter.
   */
  get reserve(): number {
    const n = this.params.maxTokens
    const room = Math.min(256, Math.floor(this.options.nCtx / 4))
    return n < 0 ? room : this.options.replyShift ? Math.min(n, room) : n
  }

  /**
   * The prompt of the next turn. When it and the reply's room exceed the context, the oldest turns
   * are dropped (--context-shift) or the message is refused with ChatContextFullError: the history is
   * never cut silently.
   */
  plan(text: string): TurnPlan {
    const user: ChatMessage = {role: 'user', content: text}
    validateHistory([...this.messages(), user])
    const {tokenizer, template, nCtx, contextShift} = this.options
    const system = this.messages().slice(0, this.system === undefined ? 0 : 1)
    const reserve = this.reserve
    let start = 0
    for (;;) {
      const messages = [...system, ...this.turns.slice(start), user]
      const rendered = template.render(messages, {addGenerationPrompt: true})
      const prompt = encodeChatPrompt(tokenizer, rendered)
      if (fitPrompt(prompt.length, nCtx, reserve).fits) return {messages, rendered, prompt, dropped: start, reserve}
      if (!contextShift || start >= this.turns.length) {
        const what = start > 0 || this.turns.length === 0 ? 'this message (with the system prompt)' : 'the conversation with this message'
        const advice =
          start > 0 || this.turns.length === 0
            ? 'shorten it, lower -n, or raise -c'
            : '/reset starts over; --context-shift drops the oldest turns instead; -c sets a larger context'
        throw new ChatContextFullError(
          `${what} does not fit: ${prompt.length} tokens plus ${reserve} for the reply, but the context holds ${nCtx}; ${advice}`,
          prompt.length,
          reserve,
          nCtx,
        )
      }
      // Drop whole turns: through the next user message, so roles still alternate.
      let next = start + 1
      while (next < this.turns.length && this.turns[next]!.role !== 'user') next++
      start = next
    }
  }

  /**
   * The tokens a context shift keeps: those the system prompt renders to at the start of the prompt
   * (its rendering alone, as far as it agrees with the prompt), else the BOS token.
   */
  private systemTokens(prompt: readonly number[]): number {
    const {tokenizer, template} = this.options
    const bos = keptTokens(prompt, 0, tokenizer.bos)
    if (this.system === undefined) return bos
    try {
      const alone = encodeChatPrompt(tokenizer, template.render([{role: 'system', content: this.system}], {addGenerationPrompt: false}))
      return Math.max(bos, commonPrefixLength(alone, prompt))
    } catch {
      return bos // a template that will not render a system message alone
    }
  }

  /** Start a turn: the reply streams from `stream`; `result` resolves when it ends (or was stopped). */
  send(text: string, signal?: AbortSignal): ChatTurn {
    // One context, one generation at a time.
    if (this.active) throw new RunnerError('CHAT_BUSY', 'a reply is still being generated; stop it first')
    const plan = this.plan(text)
    const {session, nCtx} = this.options
    const limit = this.params.maxTokens
    // -1: until the reply ends, or the context is full (shifting, until the reply ends).
    const maxTokens = limit >= 0 ? limit : this.options.replyShift ? 2 ** 31 - 1 : nCtx
    const seed = this.params.sampling.seed
    const abort = new AbortController()
    if (signal?.aborted) abort.abort()
    const forward = () => abort.abort()
    signal?.addEventListener('abort', forward, {once: true})
    const constraint = this.options.constraint
    const turn = generate(session, {
      prompt: plan.prompt,
      maxTokens,
      sampling: this.params.sampling,
      signal: abort.signal,
      ...(constraint ? {constraint} : {}),
      ...(this.options.draft?.draft ? {draft: this.options.draft.draft} : {}),
      ...(this.options.replyShift ? {contextShift: {keep: this.systemTokens(plan.prompt)}} : {}),
    })
    const active: {abort: AbortController; done: Promise<unknown>} = {abort, done: Promise.resolve()}
    // Cleared before anyone awaiting the result resumes, so the next turn can start at once.
    const release = () => {
      if (this.active === active) this.active = undefined
    }
    const result = turn.result.then(
      (r) => {
        release()
        signal?.removeEventListener('abort', forward)
        const kept = !(r.finishReason === 'aborted' && r.tokenIds.length === 0)
        // --context-shift drops the oldest turns only when this turn is kept: a discarded turn changes nothing.
        if (kept) this.turns = [...this.turns.slice(plan.dropped), {role: 'user', content: text}, {role: 'assistant', content: r.text}]
        const out: TurnResult = {
          reply: r.text,
          tokens: r.tokenIds,
          finishReason: r.finishReason,
          kept,
          promptTokens: plan.prompt,
          cachedTokens: turn.cachedTokens,
          evaluatedTokens: r.usage.evaluatedTokens,
          promptMs: r.timings.promptMs,
          decodeMs: r.timings.decodeMs,
          contextUsed: this.contextUsed,
          dropped: plan.dropped,
          shifts: r.shifts,
          seed,
          maxTokens: limit,
          ...(this.options.draft ? {speculation: speculationReport(this.options.draft.status, r.draft)} : {}),
        }
        this.last = out
        return out
      },
      (error: unknown) => {
        release()
        signal?.removeEventListener('abort', forward)
        throw error
      },
    )
    active.done = result.catch(() => {})
    this.active = active
    return {plan, stream: turn.events, cachedTokens: turn.cachedTokens, result}
  }

  /** Stop the turn being generated, if any, and wait until the engine has let go of the context. */
  async stop(): Promise<void> {
    const active = this.active
    if (!active) return
    active.abort.abort()
    await active.done
  }

  /** Forget the turns (the system prompt stays) and the KV cache. */
  reset(): void {
    this.turns = []
    this.last = undefined
    this.options.session.reset()
  }

  /** Set or remove the system prompt; the next turn re-evaluates from the first changed token. */
  setSystem(text: string | undefined): void {
    const next = text === undefined || text === '' ? undefined : text
    validateHistory([...(next === undefined ? [] : [{role: 'system', content: next}]), ...this.turns, {role: 'user', content: '.'}])
    this.system = next
  }

  toSaved(): SavedConversation {
    return {model: this.options.modelName, messages: this.messages()}
  }

  /**
   * Replace the conversation with a saved one: {"messages": [...]} or a bare messages array, checked
   * as any history is (and rendered once, so a template that refuses it says so now).
   */
  load(input: unknown, param = 'messages'): number {
    const list = Array.isArray(input)
      ? input
      : typeof input === 'object' && input !== null && 'messages' in input
        ? (input as {messages: unknown}).messages
        : undefined
    if (list === undefined)
      throw new RunnerError('CHAT_LOAD_FAILED', 'a saved chat is {"messages": [...]} or an array of messages', ExitCode.usage)
    const messages = Array.isArray(list) && list.length === 0 ? [] : validateHistory(list, param, {endWith: 'any'})
    const systems = messages.filter((m) => m.role === 'system')
    const turns = messages.filter((m) => m.role !== 'system')
    if (turns.length > 0) this.options.template.render(messages, {addGenerationPrompt: false})
    // Several leading system messages become one, joined by a blank line (the runner keeps one system prompt).
    this.system = systems.length === 0 ? undefined : systems.map((m) => m.content).join('\n\n')
    this.turns = turns
    this.last = undefined
    return messages.length
  }

  async saveFile(file: string): Promise<number> {
    const saved = this.toSaved()
    try {
      await writeFile(file, `${JSON.stringify(saved, null, 2)}\n`)
    } catch (error) {
      throw new RunnerError('CHAT_SAVE_FAILED', `cannot write ${file}: ${(error as Error).message}`)
    }
    return saved.messages.length
  }

  async loadFile(file: string): Promise<number> {
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      throw new RunnerError('CHAT_LOAD_FAILED', `cannot read ${file}: ${(error as Error).message}`, ExitCode.usage)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (error) {
      throw new RunnerError('CHAT_LOAD_FAILED', `${file} is not JSON: ${(error as Error).message}`, ExitCode.usage)
    }
    return this.load(parsed)
  }
}

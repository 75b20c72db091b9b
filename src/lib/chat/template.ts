import {Template} from '@huggingface/jinja'

import {ExitCode, RunnerError} from '../errors.js'
import {GgufMetadata, type GgufModelFiles} from '../gguf/index.js'
import {encodePrompt, type Tokenizer} from '../tokenizer/index.js'
import {type ChatMessage, ChatHistoryError} from './messages.js'
import {RENDER_BUDGET_DEFAULTS, type RenderBudget, renderWithinBudget, TemplateBudgetError} from './render-budget.js'

export const CHAT_TEMPLATE_KEY = 'tokenizer.chat_template'

/**
 * The template used when a model carries none: ChatML, which is also llama.cpp's default. Models
 * trained without it will not follow it well; /v1/capabilities and the chat status line name it.
 */
export const CHATML_TEMPLATE =
  "{%- for message in messages -%}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}{%- endfor -%}" +
  "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"

/** Where a template came from: the model's metadata, the documented fallback, or the user. */
export type ChatTemplateSource = 'model' | 'fallback-chatml' | 'override'

export interface RenderOptions {
  /** End with the header of an assistant turn, so the model writes the reply (default true). */
  readonly addGenerationPrompt?: boolean
  /** Function tools as transformers and llama.cpp's --jinja pass them: [{type: "function", function: {name, description, parameters}}]. */
  readonly tools?: readonly unknown[]
  /** Further template variables (`chat_template_kwargs`: enable_thinking, ...); never the ones above. */
  readonly variables?: Readonly<Record<string, unknown>>
}

/** Variables the renderer sets itself; chat_template_kwargs may not replace them. */
export const RESERVED_TEMPLATE_VARIABLES = ['messages', 'add_generation_prompt', 'bos_token', 'eos_token', 'tools'] as const

/** A chat template, parsed once, rendered per request through @huggingface/jinja. */
export class ChatTemplate {
  private readonly template: Template

  private constructor(
    readonly source: string,
    readonly origin: ChatTemplateSource,
    private readonly bosToken: string,
    private readonly eosToken: string,
    /** Bounds on every render (./render-budget.ts). */
    readonly budget: RenderBudget,
  ) {
    const what = origin === 'model' ? `model's ${CHAT_TEMPLATE_KEY}` : 'chat template'
    try {
      this.template = new Template(source)
    } catch (error) {
      throw new RunnerError(
        'CHAT_TEMPLATE_INVALID',
        `the ${what} does not parse (${(error as Error).message}); use --chat-template chatml for the fallback, or give a template file`,
        ExitCode.invalidModel,
      )
    }
    // A template that loops past its budget on a four-message history would do so on every
    // request: refused at load, by name, rather than per request. Other errors (a template that
    // raises on a system message, say) are the history's business and wait for one.
    try {
      this.render(PROBE_HISTORY)
    } catch (error) {
      if (error instanceof ChatHistoryError && error.code === BUDGET_CODE)
        throw new RunnerError(BUDGET_CODE, `the ${what} ${error.message.replace(/^the chat template /, '')}`, ExitCode.invalidModel)
    }
  }

  /**
   * The model's own template, or ChatML when it has none. `override` is "chatml" or the text of a
   * template, and wins over the model's.
   */
  static forModel(gguf: GgufModelFiles, tokenizer: Tokenizer, override?: string, budget = RENDER_BUDGET_DEFAULTS): ChatTemplate {
    const bos = tokenizer.bos === undefined ? '' : tokenizer.tokenText(tokenizer.bos)
    const eos = tokenizer.eos === undefined ? '' : tokenizer.tokenText(tokenizer.eos)
    if (override !== undefined)
      return new ChatTemplate(
        override === 'chatml' ? CHATML_TEMPLATE : override,
        override === 'chatml' ? 'fallback-chatml' : 'override',
        bos,
        eos,
        budget,
      )
    const first = gguf.shards[0]!
    const meta = new GgufMetadata(gguf.metadata, first.kvOffsets, gguf.path)
    const own = meta.stringOr(CHAT_TEMPLATE_KEY, undefined)
    return own === undefined
      ? new ChatTemplate(CHATML_TEMPLATE, 'fallback-chatml', bos, eos, budget)
      : new ChatTemplate(own, 'model', bos, eos, budget)
  }

  /** A template from its text (tests, and callers that read a template file). */
  static fromSource(
    source: string,
    tokens: {bos?: string; eos?: string} = {},
    origin: ChatTemplateSource = 'override',
    budget = RENDER_BUDGET_DEFAULTS,
  ): ChatTemplate {
    return new ChatTemplate(source, origin, tokens.bos ?? '', tokens.eos ?? '', budget)
  }

  /** What a worker thread needs to build the same template. */
  get tokens(): {bos: string; eos: string} {
    return {bos: this.bosToken, eos: this.eosToken}
  }

  /**
   * Render a validated history. A template that raises (most say why: "roles must alternate
   * user/assistant/...") refuses the history with its own words, naming `messages`; one that goes
   * past the render budget is refused with code CHAT_TEMPLATE_BUDGET.
   */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): string {
    const variables = {
      ...options.variables,
      messages: messages.map(templateMessage),
      add_generation_prompt: options.addGenerationPrompt ?? true,
      bos_token: this.bosToken,
      eos_token: this.eosToken,
      ...(options.tools && options.tools.length > 0 ? {tools: options.tools} : {}),
    }
    try {
      return renderWithinBudget(this.template, variables, this.budget)
    } catch (error) {
      if (error instanceof TemplateBudgetError) throw new ChatHistoryError('messages', error.message, BUDGET_CODE)
      throw new ChatHistoryError(
        'messages',
        `the model's chat template cannot represent this history: ${(error as Error).message}`,
        'CHAT_TEMPLATE_REFUSED',
      )
    }
  }
}

const BUDGET_CODE = 'CHAT_TEMPLATE_BUDGET'

/** The load-time probe: a system prompt and two turns, the shape every template renders. */
const PROBE_HISTORY: readonly ChatMessage[] = [
  {role: 'system', content: 'You are helpful.'},
  {role: 'user', content: 'Hello'},
  {role: 'assistant', content: 'Hi.'},
  {role: 'user', content: 'Bye'},
]

/**
 * A message as templates read it (transformers' and llama.cpp's convention): calls with their
 * arguments parsed (templates apply `tojson` to them), and only the keys a message has, since
 * templates test `'tool_calls' in message`.
 */
function templateMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {role: m.role, content: m.content}
  if (m.name !== undefined) out.name = m.name
  if (m.toolCalls) {
    out.tool_calls = m.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: {name: c.name, arguments: JSON.parse(c.arguments) as unknown},
    }))
  }
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId
  if (m.reasoning !== undefined) out.reasoning_content = m.reasoning
  return out
}

/**
 * Tokens of a rendered chat prompt: special tokens written by the template (<|im_start|>, <s>...)
 * are parsed as such, and the model's BOS is added once when the vocabulary asks for it.
 */
export function encodeChatPrompt(tokenizer: Tokenizer, rendered: string): number[] {
  return encodePrompt(tokenizer, rendered, {addBos: true, parseSpecial: true})
}

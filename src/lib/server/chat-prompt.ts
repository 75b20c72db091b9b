/**
 * A validated history (and a request's tools) to the prompt a chat route evaluates, for OpenAI's and
 * Anthropic's routes alike: the model's template renders it (tools passed to templates that render
 * them, the generic format otherwise); a history that ends with the assistant is a prefill the model
 * continues (transformers' continue_final_message); a field the template drops without a trace (a
 * participant name, a later system message) is refused by name rather than ignored. Also: how the
 * answer is read back (thinking, calls) and the constraint that makes calls valid.
 */
import {type ChatMessage, RESERVED_TEMPLATE_VARIABLES} from '../chat/index.js'
import type {Constraint} from '../grammar/index.js'
import {type AnswerOptions, templateThinks, thinkingConstraint, type ThinkStart, toolConstraint, toolPrompt} from '../tools/index.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import type {RequestEnv} from './requests.js'
import {compileToolConstraint} from './structured.js'
import {refuseUnfittable} from './request-limits.js'
import type {RequestTools} from './tool-fields.js'

export interface ChatPrompt {
  readonly prompt: number[]
  readonly rendered: string
  /** How to read the answer; undefined: plain text. */
  readonly answer: AnswerOptions | undefined
  readonly constraint: Constraint | undefined
  /** With thinking budgeted: the constraint of the first phase (thinking alone) and of the answer after it. */
  readonly phases?: {readonly thinking: Constraint | undefined; readonly after: Constraint | undefined}
}

export interface ChatPromptInput {
  readonly messages: readonly ChatMessage[]
  readonly tools: RequestTools
  readonly api: 'openai' | 'anthropic'
  /** chat_template_kwargs. */
  readonly variables?: Readonly<Record<string, unknown>>
  /** How the request names its messages in refusals: `messages[3]` (OpenAI) or `messages.3` (Anthropic). */
  readonly at: (i: number) => string
  /** false: render the history as it is, without the assistant's header (llama-server's /apply-template option). */
  readonly addGenerationPrompt?: boolean
  /** The answer runs in two phases (a thinking budget): build both phases' constraints. */
  readonly phased?: boolean
  /** false: the prompt need not fit a slot (count_tokens counts a longer one, /apply-template renders it). */
  readonly fitContext?: boolean
  /** The field a template's refusal names (default `messages`; the Responses API's `input`). */
  readonly historyParam?: string
}

/** Where a rendered prompt leaves the model with respect to thinking. */
function thinkStart(source: string, rendered: string): ThinkStart {
  if (!templateThinks(source)) return 'none'
  if (/<think>\s*$/.test(rendered)) return 'inside'
  if (/<\/think>\s*$/.test(rendered)) return 'none'
  return 'optional'
}

export async function buildChatPrompt(env: RequestEnv, input: ChatPromptInput): Promise<ChatPrompt> {
  for (const key of Object.keys(input.variables ?? {})) {
    if ((RESERVED_TEMPLATE_VARIABLES as readonly string[]).includes(key))
      throw badParam(`chat_template_kwargs.${key}`, `chat_template_kwargs.${key} is set by the server and cannot be given`)
  }
  const {tools, choice, parallel} = input.tools
  const tp = toolPrompt(env.template, input.messages, tools, choice)
  const render = async (messages: readonly ChatMessage[], addGenerationPrompt: boolean) => {
    try {
      return await env.work.render(messages, {
        addGenerationPrompt,
        ...(tp.tools ? {tools: tp.tools} : {}),
        ...(input.variables ? {variables: input.variables} : {}),
      })
    } catch (error) {
      const e = toApiError(error)
      throw input.historyParam && e.param === 'messages' ? new ApiError(e.status, e.message, input.historyParam, e.code) : e
    }
  }
  const last = tp.messages.at(-1)!
  const lastIndex = input.messages.length - 1
  let rendered: string
  if (input.addGenerationPrompt === false) rendered = await render(tp.messages, false)
  else if (input.messages[lastIndex]!.toolCalls) {
    throw badParam(
      `${input.at(lastIndex)}`,
      `${input.at(lastIndex)} calls tools: send their results (role "tool") before asking for a reply`,
    )
  } else if (last.role === 'assistant' && last.content.trim().length > 0) {
    rendered = await continueFinal((m) => render(m, false), tp.messages, input.at(lastIndex))
  } else if (last.role === 'assistant') {
    rendered = await render(tp.messages.slice(0, -1), true)
  } else rendered = await render(tp.messages, true)
  await refuseDropped(input, (m) => env.work.render(m))
  // A rendered prompt too long for the context whatever the tokenizer does is refused before it is
  // tokenized (the rendered text: templates drop and trim some of what they are given).
  if (input.fitContext !== false) refuseUnfittable(env.tokenizer, env.nCtx, rendered.length, input.historyParam ?? 'messages')
  let prompt: number[]
  try {
    prompt = await env.work.encode(rendered, 'chat')
  } catch (error) {
    throw toApiError(error)
  }
  const think = thinkStart(env.template.source, rendered)
  const callable = choice.mode === 'none' ? [] : tools
  const answer: AnswerOptions | undefined =
    callable.length > 0 || think !== 'none'
      ? {format: tp.format, toolNames: new Set(callable.map((t) => t.name)), think, api: input.api}
      : undefined
  // The functions the grammar holds (a named choice: that one), each schema checked alone so a refusal names its field.
  const inGrammar = choice.mode === 'named' ? tools.filter((t) => t.name === choice.name) : tools
  const compile = (source: ReturnType<typeof toolConstraint>) => (source ? compileToolConstraint(source, inGrammar) : undefined)
  const constraint = compile(toolConstraint({format: tp.format, tools, choice, parallel, think}))
  if (!input.phased) return {prompt, rendered, answer, constraint}
  const after = compile(toolConstraint({format: tp.format, tools, choice, parallel, think: 'none'}))
  return {prompt, rendered, answer, constraint, phases: {thinking: compile(thinkingConstraint(think)), after}}
}

/** Stands in for the prefill's text while the history renders: nothing a template would change or a user would write. */
const PREFILL_MARK = '\u{F8FF}prefill\u{F8FF}'

/**
 * The rendered history cut where the final assistant message's text begins, then that text as
 * given: the model continues it (transformers' continue_final_message, located exactly: the
 * history is rendered with a mark in its place, so the text cannot be found in the wrong spot, and
 * the template's end-of-turn after it never gets in).
 */
async function continueFinal(
  render: (m: readonly ChatMessage[]) => Promise<string>,
  messages: readonly ChatMessage[],
  at: string,
): Promise<string> {
  const last = messages.at(-1)!
  const marked = await render([...messages.slice(0, -1), {...last, content: PREFILL_MARK}])
  const end = marked.indexOf(PREFILL_MARK)
  if (end < 0 || marked.indexOf(PREFILL_MARK, end + 1) >= 0)
    throw badParam(at, `${at}: the chat template does not render the assistant's text verbatim, so it cannot be continued`)
  return marked.slice(0, end) + last.content
}

/**
 * Refuse what the template would drop: the first named message and the first system message after
 * the start are rendered with and without (plainly: dropping is the template's habit, whatever the
 * tools); the same text means the template ignores them.
 */
async function refuseDropped(input: ChatPromptInput, render: (m: readonly ChatMessage[]) => Promise<string>): Promise<void> {
  const messages = input.messages
  const named = messages.findIndex((m) => m.name !== undefined && m.role !== 'tool')
  // One pass (a history may be long): the first system message after any other role.
  const firstOther = messages.findIndex((m) => m.role !== 'system')
  const lateSystem = firstOther < 0 ? -1 : messages.findIndex((m, i) => i > firstOther && m.role === 'system')
  if (named < 0 && lateSystem < 0) return
  const same = async (variant: readonly ChatMessage[]) => {
    try {
      return (await render(variant)) === (await render(messages))
    } catch {
      // A template that cannot render the variant renders the field somehow.
      return false
    }
  }
  if (named >= 0) {
    const {name: _drop, ...without} = messages[named]!
    if (await same(messages.map((m, i) => (i === named ? without : m))))
      throw badParam(
        `${input.at(named)}.name`,
        `${input.at(named)}.name: this model's chat template does not render participant names; leave name out`,
      )
  }
  if (lateSystem >= 0 && (await same(messages.filter((_, i) => i !== lateSystem)))) {
    throw badParam(
      `${input.at(lateSystem)}.role`,
      `${input.at(lateSystem)} is a system message after the conversation started, which this model's chat template does not render; put it first`,
    )
  }
}

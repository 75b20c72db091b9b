/**
 * Anthropic's `thinking` on models whose template thinks (`<think>…</think>`, Qwen 3's
 * `enable_thinking`): `disabled` renders the template with thinking off, `enabled` with it on and a
 * budget the server enforces. A model without a thinking format is refused `enabled` by name (it
 * cannot think); a template that cannot switch thinking off is refused `disabled`.
 *
 * The budget runs in two phases on the same slot's KV: the first generates at most budget_tokens,
 * stopping at `</think>`; if thinking was still open when the budget ran out, `</think>` is written
 * for the model (as a reasoning budget of 0 does in llama.cpp), and the second phase continues the
 * answer from there with the rest of max_tokens and the request's own constraint.
 */
import type {Constraint} from '../grammar/index.js'
import {templateThinks, THINK} from '../tools/index.js'
import {badParam} from './api-error.js'
import {type GenerationContext, type GenerationDelta, type GenerationOutcome, type GenerationRequest, runGeneration} from './generation.js'
import type {RequestEnv} from './requests.js'

export interface ThinkingRequest {
  /** Template variables to render with (enable_thinking). */
  readonly variables: Readonly<Record<string, unknown>>
  /** budget_tokens, when thinking is enabled. */
  readonly budget: number | undefined
}

type Obj = Record<string, unknown>

/** The template variable Qwen 3's (and SmolLM 3's) templates switch thinking with. */
const SWITCH = 'enable_thinking'

/** What the template allows: thinking at all, and switching it off. */
type ThinkingSupport = {readonly enabled: boolean; readonly disabled: boolean; readonly switchable: boolean}
const supportOf = new WeakMap<object, ThinkingSupport>()

/** What the template does with thinking, probed once per template. */
export function thinkingSupport(env: RequestEnv): ThinkingSupport {
  const known = supportOf.get(env.template)
  if (known) return known
  const support = probeThinking(env)
  supportOf.set(env.template, support)
  return support
}

function probeThinking(env: RequestEnv): ThinkingSupport {
  const thinks = templateThinks(env.template.source)
  const switchable = thinks && renders(env, true) !== renders(env, false)
  return {enabled: thinks, disabled: !thinks || switchable, switchable}
}

export function anthropicThinking(env: RequestEnv, thinking: unknown, maxTokens: number): ThinkingRequest | undefined {
  if (thinking === undefined || thinking === null) return undefined
  const t = thinking as Obj
  if (typeof t !== 'object' || Array.isArray(t))
    throw badParam('thinking', 'thinking must be {type: "enabled", budget_tokens} or {type: "disabled"}')
  const {enabled: thinks, switchable} = thinkingSupport(env)
  if (t.type === 'disabled') {
    if (Object.keys(t).length > 1) throw badParam('thinking', 'thinking {type: "disabled"} takes no other field')
    if (thinks && !switchable)
      throw badParam(
        'thinking.type',
        'thinking.type "disabled": this model\'s chat template always thinks and has no switch to turn it off',
      )
    return {variables: thinks ? {[SWITCH]: false} : {}, budget: undefined}
  }
  if (t.type !== 'enabled') throw badParam('thinking.type', 'thinking.type must be "enabled" or "disabled"')
  for (const key of Object.keys(t))
    if (key !== 'type' && key !== 'budget_tokens') throw badParam(`thinking.${key}`, `thinking.${key} is not a field of thinking`)
  if (!thinks)
    throw badParam('thinking', 'thinking is not supported by this model: its chat template has no thinking format (<think>…</think>)')
  const budget = t.budget_tokens
  if (!Number.isSafeInteger(budget) || (budget as number) < 1)
    throw badParam('thinking.budget_tokens', 'thinking.budget_tokens must be a positive integer')
  if ((budget as number) >= maxTokens)
    throw badParam('thinking.budget_tokens', `thinking.budget_tokens (${String(budget)}) must be less than max_tokens (${maxTokens})`)
  return {variables: switchable ? {[SWITCH]: true} : {}, budget: budget as number}
}

function renders(env: RequestEnv, on: boolean): string {
  try {
    return env.template.render([{role: 'user', content: 'x'}], {variables: {[SWITCH]: on}})
  } catch {
    return ''
  }
}

export interface BudgetedRequest extends GenerationRequest {
  /** The rendered prompt (text), which the second phase continues. */
  readonly rendered: string
  readonly budget: number
  /** `constraint` holds the first phase to thinking (when the answer is constrained); this one the answer after it. */
  readonly afterThinking?: Constraint | undefined
}

/** Run with a thinking budget: both phases' text, tokens and counts joined as one generation. */
export async function runBudgeted(
  gen: GenerationContext,
  env: RequestEnv,
  p: BudgetedRequest,
  signal: AbortSignal,
  onDelta: (d: GenerationDelta) => void = () => {},
): Promise<GenerationOutcome> {
  const {constraint: _first, afterThinking, ...base} = p
  const first = await runGeneration(
    gen,
    {...p, maxTokens: Math.min(p.budget, p.maxTokens), stop: [...p.stop, THINK.close]},
    signal,
    onDelta,
  )
  const opened = p.rendered.trimEnd().endsWith(THINK.open) || first.text.trimStart().startsWith(THINK.open)
  // The model closed its thinking: at the stop string (its text held back), or as the thinking grammar's end.
  const atStop = first.stopString === THINK.close
  const closed = atStop || (p.constraint !== undefined && first.text.trimEnd().endsWith(THINK.close))
  const left = p.maxTokens - first.completionTokens
  const runOn = closed || (first.ended === 'length' && left > 0)
  if (!runOn || left <= 0) return first
  const bridge = atStop ? THINK.close : closed ? '' : opened ? `\n${THINK.close}\n\n` : ''
  if (bridge) onDelta({text: bridge, tokens: []})
  const text = first.text + bridge
  const second = await runGeneration(
    gen,
    {
      ...base,
      prompt: await env.work.encode(p.rendered + text, 'chat'),
      maxTokens: left,
      ...(afterThinking ? {constraint: afterThinking} : {}),
    },
    signal,
    onDelta,
  )
  return {
    ...second,
    text: text + second.text,
    promptTokens: first.promptTokens,
    cachedTokens: first.cachedTokens,
    completionTokens: first.completionTokens + second.completionTokens,
    tokens: [...first.tokens, ...second.tokens],
    tokenIds: [...first.tokenIds, ...second.tokenIds],
  }
}

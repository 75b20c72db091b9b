/**
 * A bounded render for chat templates. A template is code from the model file: `{% for i in
 * range(100000) %}` nested twice, or a loop that doubles a string, would otherwise hold the thread
 * (and with it `serve`'s event loop, its /health and its SIGTERM) for as long as it likes. The
 * interpreter here is @huggingface/jinja's own, counting every node it evaluates (steps), the size
 * of every string and list a node yields, and the wall time; crossing any bound stops the render
 * with TemplateBudgetError, which names the bound and its flag.
 */
import {Environment, Interpreter, type Template} from '@huggingface/jinja'

import {ExitCode, RunnerError} from '../errors.js'

export interface RenderBudget {
  /** Template nodes evaluated in one render. */
  readonly steps: number
  /** Characters of the largest string a render may build (the rendered prompt included). */
  readonly valueChars: number
  /** Elements of the largest list (a `for` over a list first makes a scope per element, outside any step). */
  readonly listItems: number
  /** Wall time of one render, in milliseconds (checked every 1,024 steps). */
  readonly milliseconds: number
}

/**
 * Far above what real templates need: Qwen2.5's template (tools and all) takes about 60 steps a
 * message, so a 2,048-message history is about 125,000; the longest prompt a 128k context holds is
 * a few MB of text.
 */
export const RENDER_BUDGET_DEFAULTS: RenderBudget = {steps: 2_000_000, valueChars: 64 << 20, listItems: 1 << 18, milliseconds: 10_000}

/** The bound a render crossed, by name, for the message and the API error's code. */
export type RenderBound = 'steps' | 'value size' | 'list size' | 'time'

export class TemplateBudgetError extends RunnerError {
  constructor(
    readonly bound: RenderBound,
    readonly limit: number,
  ) {
    const what = {
      steps: `${limit} evaluation steps`,
      'value size': `strings of ${limit} characters`,
      'list size': `lists of ${limit} items`,
      time: `${limit} ms`,
    }[bound]
    super(
      'CHAT_TEMPLATE_BUDGET',
      `the chat template went past its render budget (${what}) on this history; a template that loops this much is refused ` +
        '(give --chat-template chatml or a template file to replace it)',
      ExitCode.usage,
    )
    this.name = 'TemplateBudgetError'
  }
}

/**
 * The interpreter as this module uses it: the package's .d.ts files import each other without
 * extensions, which NodeNext resolution does not follow, so its own types arrive as unknown.
 */
interface JinjaValue {
  readonly type: string
  readonly value: unknown
}
interface JinjaInterpreter {
  evaluate(statement: {type: string} | undefined, environment: Environment): JinjaValue
  run(program: unknown): JinjaValue
}
const InterpreterBase = Interpreter as unknown as new (env: Environment) => JinjaInterpreter
type Statement = {type: string} | undefined
type Value = JinjaValue

/** Steps between two looks at the clock: performance.now() costs more than a step. */
const CLOCK_EVERY = 1024

/** Characters of a string value that cost one more step (about what a step costs in time). */
const CHARS_PER_STEP = 4096

/** What a `for` spends on each element before its body runs (a scope apiece): about four steps' time. */
const FOR_ELEMENT_STEPS = 4

type ForNode = {iterable: {type: string; lhs?: object}}

class BudgetedInterpreter extends InterpreterBase {
  private steps = 0
  private readonly deadline: number
  /** The iterable expressions of the `for` loops entered, whose lists are charged per element. */
  private readonly iterables = new WeakSet<object>()

  constructor(
    env: Environment,
    private readonly budget: RenderBudget,
  ) {
    super(env)
    this.deadline = performance.now() + budget.milliseconds
  }

  /** Charge `n` steps; `clock`: look at the time whatever the count. */
  charge(n: number, clock = false): void {
    this.steps += n
    if (this.steps > this.budget.steps) throw new TemplateBudgetError('steps', this.budget.steps)
    if ((clock || this.steps % CLOCK_EVERY < n) && performance.now() > this.deadline)
      throw new TemplateBudgetError('time', this.budget.milliseconds)
  }

  /** range(n) is refused before its list exists (the library builds it first). */
  chargeList(length: number): void {
    if (length > this.budget.listItems) throw new TemplateBudgetError('list size', this.budget.listItems)
    this.charge(length, true)
  }

  override evaluate(statement: Statement, environment: Environment): Value {
    this.charge(1)
    if (statement?.type === 'For') {
      const iterable = (statement as unknown as ForNode).iterable
      this.iterables.add(iterable.type === 'SelectExpression' && iterable.lhs ? iterable.lhs : iterable)
    }
    const value = super.evaluate(statement, environment)
    // A `for` spends time outside any step (a scope per element before the first iteration).
    if (statement && this.iterables.has(statement)) {
      const v = value.value as {length?: number; size?: number}
      this.charge((v.length ?? v.size ?? 0) * FOR_ELEMENT_STEPS, true)
    }
    if (value.type === 'StringValue') {
      const length = (value.value as string).length
      if (length > this.budget.valueChars) throw new TemplateBudgetError('value size', this.budget.valueChars)
      // A filter over a long string (|upper, |replace) is one step that takes as long as many:
      // charged by its length, with a look at the clock.
      if (length >= CHARS_PER_STEP) this.charge(Math.floor(length / CHARS_PER_STEP), true)
    }
    if (value.type === 'ArrayValue' && (value.value as unknown[]).length > this.budget.listItems)
      throw new TemplateBudgetError('list size', this.budget.listItems)
    return value
  }
}

/**
 * Jinja's `range`, charged to the budget before the list exists: `range(10 ** 9)` is refused at
 * once instead of filling memory.
 */
function boundedRange(interpreter: BudgetedInterpreter) {
  return (start: number, stop?: number, step = 1): number[] => {
    if (stop === undefined) [start, stop] = [0, start]
    if (step === 0) throw new Error('range() step must not be zero')
    const length = Math.max(0, Math.ceil((stop - start) / step)) || 0
    interpreter.chargeList(length)
    return Array.from({length}, (_, i) => start + i * step)
  }
}

/** The library's strftime_now for the directives it knows (%Y %m %d %b %B %H %M %%), local time. */
function strftimeNow(format: string): string {
  const now = new Date()
  const pad = (n: number) => String(n).padStart(2, '0')
  const month = (style: 'long' | 'short') => new Intl.DateTimeFormat(undefined, {month: style}).format(now)
  const directives: Record<string, () => string> = {
    '%Y': () => String(now.getFullYear()),
    '%m': () => pad(now.getMonth() + 1),
    '%d': () => pad(now.getDate()),
    '%b': () => month('short'),
    '%B': () => month('long'),
    '%H': () => pad(now.getHours()),
    '%M': () => pad(now.getMinutes()),
    '%%': () => '%',
  }
  return format.replace(/%[YmdbBHM%]/g, (d) => directives[d]!())
}

/**
 * Render a parsed template with `variables` inside `budget`: the globals @huggingface/jinja's
 * Template.render sets (true/false/none in both spellings, raise_exception, range, strftime_now),
 * with range bounded, then the variables.
 */
export function renderWithinBudget(template: Template, variables: Record<string, unknown>, budget: RenderBudget): string {
  const env = new Environment()
  const interpreter = new BudgetedInterpreter(env, budget)
  const globals: Record<string, unknown> = {
    false: false,
    true: true,
    none: null,
    False: false,
    True: true,
    None: null,
    raise_exception: (message: unknown) => {
      throw new Error(String(message))
    },
    range: boundedRange(interpreter),
    strftime_now: strftimeNow,
  }
  for (const [name, value] of Object.entries({...globals, ...variables})) env.set(name, value)
  const result = interpreter.run(template.parsed)
  return String(result.value)
}

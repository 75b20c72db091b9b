/**
 * Reading a model's answer as it streams: thinking (between <think> and </think>, for templates that
 * think), text, and tool calls in the family's syntax (./formats.ts). Text is released as soon as it
 * cannot be the start of a call or of the end of thinking; each call is released once it is whole.
 * A non-streamed answer is the same parser fed once, so streamed and whole answers are equal by
 * construction. A call region that does not parse as calls of offered tools is text: nothing the
 * model wrote is dropped, and nothing is passed off as a call that is not one.
 */
import {type ToolFormat, THINK} from './formats.js'
import {arrayElements, objectMembers, type Span} from './json-spans.js'
import type {AnswerEvent, ParsedAnswer, ToolCallOut} from './types.js'

/** Where the answer starts with respect to thinking. */
export type ThinkStart = 'none' | 'optional' | 'inside'

export interface AnswerOptions {
  readonly format: ToolFormat
  /** Names of the functions the model may call; empty: no calls (tool_choice none, or no tools). */
  readonly toolNames: ReadonlySet<string>
  readonly think: ThinkStart
  readonly api: 'openai' | 'anthropic'
}

type Phase = 'think-start' | 'think' | 'body-start' | 'text' | 'calls'

const HERMES_CLOSE = '</tool_call>'

/** Spellings that begin a call region, besides the marker: control tokens some families write. */
const CALL_PREFIXES: readonly string[] = ['[TOOL_CALLS]', '<|python_tag|>']

/** How many trailing characters of `text` could begin `marker` (so must wait for more text). */
function partialSuffix(text: string, marker: string): number {
  for (let k = Math.min(marker.length - 1, text.length); k > 0; k--) if (marker.startsWith(text.slice(text.length - k))) return k
  return 0
}

function trailingSpace(text: string): number {
  return text.length - text.trimEnd().length
}

/** How much of the tail to hold: a partial marker, and the whitespace before it (trimmed if the marker comes). */
function heldTail(text: string, marker: string | undefined): number {
  const partial = marker === undefined ? 0 : partialSuffix(text, marker)
  return partial + trailingSpace(text.slice(0, text.length - partial))
}

export class AnswerParser {
  private buf = ''
  private pos = 0
  private phase: Phase
  private readonly events: AnswerEvent[] = []
  private readonly calls: ToolCallOut[] = []
  private content = ''
  private reasoning = ''
  /** The whitespace held back before a call marker (given back if the region is not calls). */
  private spaceBeforeCalls = ''

  constructor(private readonly o: AnswerOptions) {
    this.phase = o.think === 'inside' ? 'think' : o.think === 'optional' ? 'think-start' : 'body-start'
  }

  /** Feed generated text; returns what became final. */
  push(text: string): AnswerEvent[] {
    this.buf += text
    this.advance(false)
    return this.drain()
  }

  /** The generation ended: release everything held back. */
  finish(): AnswerEvent[] {
    this.advance(true)
    return this.drain()
  }

  result(): ParsedAnswer {
    return {content: this.content, reasoning: this.reasoning, calls: this.calls}
  }

  private drain(): AnswerEvent[] {
    return this.events.splice(0)
  }

  private emitText(text: string): void {
    if (text.length === 0) return
    this.content += text
    this.events.push({type: 'text', text})
  }

  private emitReasoning(text: string): void {
    if (text.length === 0) return
    this.reasoning += text
    this.events.push({type: 'reasoning', text})
  }

  private advance(final: boolean): void {
    for (;;) {
      const before = this.phase
      this.step(final)
      if (this.phase === before) return
    }
  }

  private step(final: boolean): void {
    const rest = this.buf.slice(this.pos)
    switch (this.phase) {
      case 'think-start': {
        const lead = rest.trimStart()
        if (lead.startsWith(THINK.open)) {
          this.pos += rest.length - lead.length + THINK.open.length
          this.phase = 'think'
        } else if (final || !THINK.open.startsWith(lead)) this.phase = 'body-start'
        return
      }
      case 'think': {
        const end = rest.indexOf(THINK.close)
        if (end >= 0) {
          this.emitReasoning(this.reasoningText(rest.slice(0, end)).trimEnd())
          const after = rest.slice(end + THINK.close.length)
          this.pos += end + THINK.close.length + (after.length - after.trimStart().length)
          this.phase = 'body-start'
          return
        }
        const keep = final ? 0 : heldTail(rest, THINK.close)
        this.emitReasoning(this.reasoningText(rest.slice(0, rest.length - keep), this.reasoning.length === 0))
        this.pos += rest.length - keep
        return
      }
      case 'body-start':
        return this.bodyStart(rest, final)
      case 'text':
        return this.textStep(rest, final)
      case 'calls':
        return this.callsStep(rest, final)
    }
  }

  /** Reasoning without the newlines templates put around it (the first chunk's leading ones). */
  private reasoningText(text: string, first = this.reasoning.length === 0): string {
    return first ? text.trimStart() : text
  }

  private bodyStart(rest: string, final: boolean): void {
    const f = this.o.format
    if (this.o.toolNames.size === 0 || f.layout === 'text-then-calls') {
      this.phase = 'text'
      return
    }
    if (f.layout === 'json') {
      this.phase = 'calls'
      return
    }
    // calls-or-text: the first characters decide.
    const lead = rest.trimStart()
    const starts = [f.marker, ...CALL_PREFIXES]
    if (starts.some((s) => lead.startsWith(s))) {
      this.pos += rest.length - lead.length
      this.phase = 'calls'
    } else if (final || (lead.length > 0 && !starts.some((s) => s.startsWith(lead)))) {
      this.pos += rest.length - lead.length
      this.phase = 'text'
    }
  }

  private textStep(rest: string, final: boolean): void {
    const f = this.o.format
    const callsHere = this.o.toolNames.size > 0 && f.layout === 'text-then-calls'
    const at = callsHere ? rest.indexOf(f.marker) : -1
    if (at >= 0) {
      const before = rest.slice(0, at)
      this.emitText(this.content.length === 0 ? before.trim() : before.trimEnd())
      this.spaceBeforeCalls = before.slice(before.trimEnd().length)
      this.pos += at
      this.phase = 'calls'
      return
    }
    const keep = final ? trailingSpace(rest) : heldTail(rest, callsHere ? f.marker : undefined)
    const out = rest.slice(0, rest.length - keep)
    this.emitText(this.content.length === 0 ? out.trimStart() : out)
    // Leading whitespace of the answer is dropped, not held; at the end, so is trailing whitespace.
    this.pos = final ? this.buf.length : this.pos + rest.length - keep
  }

  /** Hermes blocks are released one by one as each closes; other layouts parse once at the end. */
  private callsStep(rest: string, final: boolean): void {
    const f = this.o.format
    if (f.layout === 'text-then-calls' && !final) {
      const block = this.hermesBlock(rest, false)
      if (block) {
        this.addCall(block.call)
        const after = rest.slice(block.end)
        this.pos += block.end + (after.length - after.trimStart().length)
      }
      return
    }
    if (!final) return
    this.pos = this.buf.length
    const region = rest.trim()
    if (region.length === 0) return
    const calls = this.parseRegion(region)
    if (calls) calls.forEach((c) => this.addCall(c))
    // Not calls after all: the text as the model wrote it, with the whitespace before it.
    else this.emitText(this.content.length === 0 ? region : this.spaceBeforeCalls + region)
  }

  private addCall(call: {name: string; arguments: string}): void {
    const out = {id: this.o.format.newId(this.o.api), ...call}
    this.events.push({type: 'call', index: this.calls.length, call: out})
    this.calls.push(out)
  }

  /**
   * The Hermes block at the start of `text`: the first `</tool_call>` after which the body is a call
   * (an argument string may itself contain `</tool_call>`); at the end, an unclosed block too.
   */
  private hermesBlock(text: string, final: boolean): {call: {name: string; arguments: string}; end: number} | undefined {
    const {marker} = this.o.format
    if (!text.startsWith(marker)) return undefined
    for (let end = text.indexOf(HERMES_CLOSE, marker.length); end >= 0; end = text.indexOf(HERMES_CLOSE, end + 1)) {
      const call = this.callIn(text.slice(marker.length, end))
      if (call) return {call, end: end + HERMES_CLOSE.length}
    }
    const call = final ? this.callIn(text.slice(marker.length)) : undefined
    return call ? {call, end: text.length} : undefined
  }

  /** The calls a whole region holds, or undefined when it is not calls of offered tools. */
  private parseRegion(region: string): Array<{name: string; arguments: string}> | undefined {
    const f = this.o.format
    if (f.layout === 'text-then-calls') {
      const calls: Array<{name: string; arguments: string}> = []
      let rest = region
      while (rest.length > 0) {
        const block = this.hermesBlock(rest, true)
        if (!block) return undefined
        calls.push(block.call)
        rest = rest.slice(block.end).trimStart()
      }
      return calls
    }
    let body = region
    for (const p of CALL_PREFIXES) if (body.startsWith(p)) body = body.slice(p.length).trim()
    if (!isJson(body)) return undefined
    if (f.layout === 'json') {
      const members = objectMembers(body, 0)
      const member = (key: string) => members?.find((m) => m.key === key)
      const response = member('response')
      if (members?.length === 1 && response) {
        const text: unknown = JSON.parse(body.slice(response.start, response.end))
        if (typeof text !== 'string') return undefined
        this.emitText(text)
        return []
      }
      const list = member('tool_calls')
      const one = member('tool_call')
      if (members?.length !== 1 || !(list ?? one)) return undefined
      const spans = list ? arrayElements(body, list.start) : [one!]
      return spans ? every(spans.map((sp) => this.callAt(body, sp))) : undefined
    }
    const spans = body.startsWith('[') ? arrayElements(body, 0) : [{start: 0, end: body.length}]
    return spans ? every(spans.map((sp) => this.callAt(body, sp))) : undefined
  }

  /** A call written as the whole of `json`. */
  private callIn(json: string): {name: string; arguments: string} | undefined {
    const text = json.trim()
    return isJson(text) ? this.callAt(text, {start: 0, end: text.length}) : undefined
  }

  /**
   * The call the object at `span` of (valid JSON) `text` is: an offered function's name, and its
   * arguments (an object) as the model wrote them.
   */
  private callAt(text: string, span: Span): {name: string; arguments: string} | undefined {
    const members = objectMembers(text, span.start)
    if (!members) return undefined
    const value = (key: string) => {
      const m = members.find((x) => x.key === key)
      return m && text.slice(m.start, m.end)
    }
    const nameText = value('name')
    const name: unknown = nameText === undefined ? undefined : JSON.parse(nameText)
    if (typeof name !== 'string' || !this.o.toolNames.has(name)) return undefined
    const key = this.o.format.argumentKeys.find((k) => value(k) !== undefined)
    const raw = key === undefined ? '{}' : value(key)!
    const args: unknown = JSON.parse(raw)
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return undefined
    return {name, arguments: raw}
  }
}

/** A whole answer read at once (the same parser, fed once). */
export function parseAnswer(options: AnswerOptions, text: string): ParsedAnswer {
  const parser = new AnswerParser(options)
  parser.push(text)
  parser.finish()
  return parser.result()
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

function every<T>(items: Array<T | undefined>): T[] | undefined {
  return items.every((x) => x !== undefined) ? (items as T[]) : undefined
}

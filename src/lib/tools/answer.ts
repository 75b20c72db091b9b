/**
 * Reading a model's answer as it streams: thinking (between <think> and </think>, for templates that
 * think), text, and tool calls in the family's syntax (./formats.ts). Text is released as soon as it
 * cannot be the start of a call or of the end of thinking; each call is released once it is whole.
 * A non-streamed answer is the same parser fed once, so streamed and whole answers are equal by
 * construction. A call region that does not parse as calls of offered tools is text: nothing the
 * model wrote is dropped, and nothing is passed off as a call that is not one.
 */
import {type ToolFormat, THINK} from './formats.js'
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
      this.emitText(this.content.length === 0 ? rest.slice(0, at).trim() : rest.slice(0, at).trimEnd())
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
      const close = '</tool_call>'
      const end = rest.indexOf(close)
      if (rest.startsWith(f.marker) && end >= 0) {
        const call = this.callOf(rest.slice(f.marker.length, end))
        if (call) {
          this.addCall(call)
          const after = rest.slice(end + close.length)
          this.pos += end + close.length + (after.length - after.trimStart().length)
        }
      }
      return
    }
    if (!final) return
    this.pos = this.buf.length
    const region = rest.trim()
    if (region.length === 0) return
    const calls = this.parseRegion(region)
    if (calls) calls.forEach((c) => this.addCall(c))
    else this.emitText(this.content.length === 0 ? region : `${this.content.endsWith('\n') ? '' : '\n'}${region}`)
  }

  private addCall(call: {name: string; arguments: string}): void {
    const out = {id: this.o.format.newId(this.o.api), ...call}
    this.events.push({type: 'call', index: this.calls.length, call: out})
    this.calls.push(out)
  }

  /** The calls a whole region holds, or undefined when it is not calls of offered tools. */
  private parseRegion(region: string): Array<{name: string; arguments: string}> | undefined {
    const f = this.o.format
    if (f.layout === 'text-then-calls') {
      const blocks = [...region.matchAll(/<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g)]
      const outside = region.replace(/<tool_call>[\s\S]*?(?:<\/tool_call>|$)/g, '').trim()
      if (blocks.length === 0 || outside.length > 0) return undefined
      return every(blocks.map((b) => this.callOf(b[1]!)))
    }
    let body = region
    for (const p of CALL_PREFIXES) if (body.startsWith(p)) body = body.slice(p.length).trim()
    const value = parseJson(body)
    if (f.layout === 'json') {
      const o = value as Record<string, unknown> | undefined
      if (o && typeof o.response === 'string' && Object.keys(o).length === 1) {
        this.emitText(o.response)
        return []
      }
      const list = Array.isArray(o?.tool_calls) ? o.tool_calls : o?.tool_call !== undefined ? [o.tool_call] : undefined
      return list ? every(list.map((c) => this.callFromValue(c))) : undefined
    }
    const list = Array.isArray(value) ? value : [value]
    return every(list.map((c) => this.callFromValue(c)))
  }

  private callOf(json: string): {name: string; arguments: string} | undefined {
    return this.callFromValue(parseJson(json.trim()))
  }

  private callFromValue(v: unknown): {name: string; arguments: string} | undefined {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined
    const o = v as Record<string, unknown>
    if (typeof o.name !== 'string' || !this.o.toolNames.has(o.name)) return undefined
    const key = this.o.format.argumentKeys.find((k) => k in o)
    const args = key === undefined ? {} : o[key]
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return undefined
    return {name: o.name, arguments: JSON.stringify(args)}
  }
}

/** A whole answer read at once (the same parser, fed once). */
export function parseAnswer(options: AnswerOptions, text: string): ParsedAnswer {
  const parser = new AnswerParser(options)
  parser.push(text)
  parser.finish()
  return parser.result()
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function every<T>(items: Array<T | undefined>): T[] | undefined {
  return items.every((x) => x !== undefined) ? (items as T[]) : undefined
}

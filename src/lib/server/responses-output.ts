/**
 * A Responses API answer as OpenAI builds it: output items (reasoning, one assistant message of
 * output_text, one function_call item per call) and, when streaming, the event sequence the `openai`
 * SDK's ResponseStream consumes: response.created / in_progress, each item's added, delta and done
 * events, then response.completed (or response.incomplete when the token budget ran out), every
 * event numbered by sequence_number.
 */
import {randomBytes} from 'node:crypto'

import type {AnswerEvent} from '../tools/index.js'

type Obj = Record<string, unknown>

export const newId = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`

interface OpenItem {
  readonly index: number
  readonly item: Obj
  text: string
}

export class ResponseBuilder {
  readonly output: Obj[] = []
  private open: OpenItem | undefined
  private sequence = 0

  /** `emit` receives each stream event (absent: a non-streamed response, built silently). */
  constructor(private readonly emit?: (event: Obj) => void) {}

  send(type: string, fields: Obj): void {
    this.emit?.({type, sequence_number: this.sequence++, ...fields})
  }

  private start(item: Obj): OpenItem {
    this.close()
    const open = {index: this.output.length, item, text: ''}
    this.output.push(item)
    this.open = open
    this.send('response.output_item.added', {output_index: open.index, item: {...item, status: 'in_progress'}})
    return open
  }

  /** Finish the open item: its done events with the whole text. */
  private close(): void {
    const o = this.open
    if (!o) return
    this.open = undefined
    const base = {item_id: o.item.id, output_index: o.index}
    if (o.item.type === 'message') {
      const part = {type: 'output_text', text: o.text, annotations: [], logprobs: []}
      o.item.content = [part]
      this.send('response.output_text.done', {...base, content_index: 0, text: o.text, logprobs: []})
      this.send('response.content_part.done', {...base, content_index: 0, part})
    } else if (o.item.type === 'reasoning') {
      const part = {type: 'reasoning_text', text: o.text}
      o.item.content = [part]
      this.send('response.reasoning_text.done', {...base, content_index: 0, text: o.text})
      this.send('response.content_part.done', {...base, content_index: 0, part})
    }
    o.item.status = 'completed'
    this.send('response.output_item.done', {output_index: o.index, item: o.item})
  }

  add(e: AnswerEvent): void {
    if (e.type === 'call') {
      const item = {type: 'function_call', id: newId('fc'), call_id: e.call.id, name: e.call.name, arguments: '', status: 'in_progress'}
      const o = this.start(item)
      this.send('response.function_call_arguments.delta', {item_id: item.id, output_index: o.index, delta: e.call.arguments})
      item.arguments = e.call.arguments
      this.send('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: o.index,
        name: item.name,
        arguments: item.arguments,
      })
      this.close()
      return
    }
    const kind = e.type === 'text' ? 'message' : 'reasoning'
    let o = this.open?.item.type === kind ? this.open : undefined
    if (!o) {
      o =
        kind === 'message'
          ? this.start({type: 'message', id: newId('msg'), role: 'assistant', content: [], status: 'in_progress'})
          : this.start({type: 'reasoning', id: newId('rs'), summary: [], content: [], status: 'in_progress'})
      // The part the deltas go into (the SDK's accumulator needs it announced).
      const part = kind === 'message' ? {type: 'output_text', text: '', annotations: [], logprobs: []} : {type: 'reasoning_text', text: ''}
      this.send('response.content_part.added', {item_id: o.item.id, output_index: o.index, content_index: 0, part})
    }
    o.text += e.text
    const delta = {item_id: o.item.id, output_index: o.index, content_index: 0, delta: e.text}
    this.send(
      kind === 'message' ? 'response.output_text.delta' : 'response.reasoning_text.delta',
      kind === 'message' ? {...delta, logprobs: []} : delta,
    )
  }

  /** Close the last item; an answer with no item at all gets one empty message, as a reply always has one. */
  finish(): Obj[] {
    if (this.output.length === 0) this.add({type: 'text', text: ''})
    this.close()
    return this.output
  }
}

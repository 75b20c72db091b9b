/**
 * An answer as Anthropic streams it: content blocks opened, filled and closed in order (thinking
 * with thinking_delta, text with text_delta, each tool call a tool_use block whose input arrives as
 * input_json_delta), block indexes counting from 0. An answer with no block still sends one empty
 * text block, as Anthropic does.
 */
import type {AnswerEvent} from '../tools/index.js'
import type {SseWriter} from './sse.js'

type BlockType = 'text' | 'thinking' | 'tool_use'

export class AnthropicBlocks {
  private index = -1
  private open: BlockType | undefined

  constructor(private readonly sse: SseWriter) {}

  private start(block: Record<string, unknown> & {type: BlockType}): void {
    this.stop()
    this.index++
    this.open = block.type
    this.sse.send({type: 'content_block_start', index: this.index, content_block: block}, 'content_block_start')
  }

  private delta(delta: Record<string, unknown>): void {
    this.sse.send({type: 'content_block_delta', index: this.index, delta}, 'content_block_delta')
  }

  private stop(): void {
    if (this.open === undefined) return
    // A thinking block ends with its signature; a local model's thinking is not signed.
    if (this.open === 'thinking') this.delta({type: 'signature_delta', signature: ''})
    this.sse.send({type: 'content_block_stop', index: this.index}, 'content_block_stop')
    this.open = undefined
  }

  send(e: AnswerEvent): void {
    if (e.type === 'text') {
      if (this.open !== 'text') this.start({type: 'text', text: '', citations: null})
      this.delta({type: 'text_delta', text: e.text})
    } else if (e.type === 'reasoning') {
      if (this.open !== 'thinking') this.start({type: 'thinking', thinking: '', signature: ''})
      this.delta({type: 'thinking_delta', thinking: e.text})
    } else {
      this.start({type: 'tool_use', id: e.call.id, name: e.call.name, input: {}, caller: {type: 'direct'}})
      this.delta({type: 'input_json_delta', partial_json: e.call.arguments})
      this.stop()
    }
  }

  /** Close the last block (or send the one empty text block of an empty answer). */
  end(): void {
    if (this.index < 0) this.start({type: 'text', text: '', citations: null})
    this.stop()
  }
}

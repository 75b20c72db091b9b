/**
 * An answer as Anthropic's content blocks: opened, filled and closed in order (thinking with
 * thinking_delta, text with text_delta, each tool call a tool_use block whose input arrives as
 * input_json_delta), block indexes counting from 0. The same builder makes a non-streamed
 * message's `content` (without an SSE writer), so the two cannot disagree. An answer with no block
 * still has one empty text block, as Anthropic's do.
 */
import type {AnswerEvent} from '../tools/index.js'
import type {SseWriter} from './sse.js'

type BlockType = 'text' | 'thinking' | 'tool_use'
type Block = Record<string, unknown> & {type: BlockType}

export class AnthropicBlocks {
  /** The message's content, as built so far. */
  readonly content: Block[] = []
  private open: Block | undefined

  constructor(private readonly sse?: SseWriter) {}

  private get index(): number {
    return this.content.length - 1
  }

  private start(block: Block): Block {
    this.stop()
    this.content.push(block)
    this.open = block
    this.sse?.send({type: 'content_block_start', index: this.index, content_block: {...block}}, 'content_block_start')
    return block
  }

  private delta(delta: Record<string, unknown>): void {
    this.sse?.send({type: 'content_block_delta', index: this.index, delta}, 'content_block_delta')
  }

  private stop(): void {
    if (this.open === undefined) return
    // A thinking block ends with its signature; a local model's thinking is not signed.
    if (this.open.type === 'thinking') this.delta({type: 'signature_delta', signature: ''})
    this.sse?.send({type: 'content_block_stop', index: this.index}, 'content_block_stop')
    this.open = undefined
  }

  send(e: AnswerEvent): void {
    if (e.type === 'text') {
      const b = this.open?.type === 'text' ? this.open : this.start({type: 'text', text: '', citations: null})
      b.text = (b.text as string) + e.text
      this.delta({type: 'text_delta', text: e.text})
    } else if (e.type === 'reasoning') {
      const b = this.open?.type === 'thinking' ? this.open : this.start({type: 'thinking', thinking: '', signature: ''})
      b.thinking = (b.thinking as string) + e.text
      this.delta({type: 'thinking_delta', thinking: e.text})
    } else {
      const b = this.start({type: 'tool_use', id: e.call.id, name: e.call.name, input: {}, caller: {type: 'direct'}})
      b.input = JSON.parse(e.call.arguments) as unknown
      this.delta({type: 'input_json_delta', partial_json: e.call.arguments})
      this.stop()
    }
  }

  /** Close the last block (or make the one empty text block of an empty answer). */
  end(): Block[] {
    if (this.content.length === 0) this.start({type: 'text', text: '', citations: null})
    this.stop()
    return this.content
  }
}

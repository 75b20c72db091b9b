/**
 * `chat_smoke`: the chat machinery of `runner chat` (ChatTemplate and ChatConversation, as
 * src/lib/chat-ui/run-chat.ts builds them) renders a system message and a user message through the
 * model's chat template (ChatML where the model has none, or when the row asks for it), and a greedy
 * reply ends (end of generation or the token budget) with text that is its tokens decoded. The anchor
 * is the template itself: the model's own, rendered by @huggingface/jinja.
 */
import {type ChatTemplateSource, ChatTemplate} from '../../chat/index.js'
import {ChatConversation} from '../../chat-ui/index.js'
import {Model, Session} from '../../engine/index.js'
import {resolveSamplingOptions} from '../../sampling/index.js'
import type {Tokenizer} from '../../tokenizer/index.js'
import {type CheckClass, type CheckParams, fail, numberParam, pass, stringParam} from '../types.js'

const SYSTEM = 'You are a helpful assistant.'
const USER = 'Tell me a story in one sentence.'
/** KV positions: the two messages and the reply, with room for long templates. */
const N_CTX = 1024

/** A reply as the conversation returns it, with its tokens' pieces decoded in one go. */
export interface ChatReply {
  readonly text: string
  readonly tokens: readonly number[]
  readonly finishReason: string
  /** The bytes of the tokens' pieces (llama.cpp's token_to_piece, control tokens as nothing), joined. */
  readonly bytes: Uint8Array
  /** Those bytes as one UTF-8 decode (invalid sequences as U+FFFD). */
  readonly decoded: string
}

/** A reply's tokens as one-shot decoding sees them: the streamed text must be this. */
export function decodePieces(tokenizer: Tokenizer, tokens: readonly number[]): {bytes: Uint8Array; decoded: string} {
  const bytes = Buffer.concat(tokens.map((id) => tokenizer.pieceBytes(id, {special: false})))
  return {bytes, decoded: new TextDecoder('utf-8', {ignoreBOM: true}).decode(bytes)}
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** True when the bytes are UTF-8, allowing a last character cut short (a reply that ran out of tokens). */
export function utf8Valid(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', {fatal: true}).decode(bytes, {stream: true})
    return true
  } catch {
    return false
  }
}

/**
 * Why a reply does not pass, or undefined: it must end by end of generation or the budget, its
 * text must be well formed and be its tokens' pieces decoded in one go, and (strictUtf8) be valid UTF-8.
 */
export function chatReplyVerdict(r: ChatReply, strictUtf8: boolean): string | undefined {
  if (r.finishReason !== 'eos' && r.finishReason !== 'length')
    return `the reply ended with finish reason ${r.finishReason}, not eos or length`
  if (LONE_SURROGATE.test(r.text)) return 'the reply holds a lone UTF-16 surrogate'
  if (r.text !== r.decoded)
    return `the reply's text ${JSON.stringify(r.text)} is not its ${r.tokens.length} tokens' pieces decoded (${JSON.stringify(r.decoded)})`
  if (strictUtf8 && !utf8Valid(r.bytes)) return `the reply's ${r.bytes.length} bytes are not valid UTF-8 (strictUtf8)`
  return undefined
}

/** The roster's `template`: the model's own (ChatML when it has none), or ChatML. */
function templateParam(params: CheckParams): 'model' | 'chatml' {
  const t = stringParam(params, 'template', 'model')
  if (t !== 'model' && t !== 'chatml') throw new TypeError(`parameter template must be "model" or "chatml", got ${JSON.stringify(t)}`)
  return t
}

function originText(origin: ChatTemplateSource, asked: 'model' | 'chatml'): string {
  if (origin === 'model') return "the model's own"
  return asked === 'chatml' ? 'chatml (asked for)' : 'chatml (the model has none)'
}

export const chatSmoke: CheckClass = {
  name: 'chat_smoke',
  summary:
    "the model's chat template (ChatML when it has none), rendered by @huggingface/jinja, takes a two-message conversation, and a greedy reply through runner chat's conversation ends (eos or the budget) as its tokens' pieces decoded",
  params: {
    template: {
      type: 'string',
      description: '"model": the model\'s own template, ChatML when it has none; "chatml": ChatML (default "model")',
    },
    maxTokens: {type: 'integer', minimum: 1, description: 'most tokens of the reply (default 16)'},
    strictUtf8: {type: 'boolean', description: 'fail when the reply is not valid UTF-8, as random weights often emit (default false)'},
  },
  async when() {
    return undefined
  },
  async run(row, params, env) {
    const asked = templateParam(params)
    const maxTokens = numberParam(params, 'maxTokens', 16)
    const strictUtf8 = params.strictUtf8 === undefined ? false : params.strictUtf8
    if (typeof strictUtf8 !== 'boolean') throw new TypeError(`parameter strictUtf8 must be a boolean, got ${JSON.stringify(strictUtf8)}`)
    const t0 = performance.now()
    const model = await Model.load(row.path, {signal: env.signal})
    try {
      let template: ChatTemplate
      try {
        template = ChatTemplate.forModel(model.gguf, model.tokenizer, asked === 'chatml' ? 'chatml' : undefined)
      } catch (error) {
        return fail(`the chat template does not load: ${(error as Error).message}`)
      }
      const origin = originText(template.origin, asked)
      const ctx = await model.createContext({nCtx: N_CTX, threads: env.threads})
      let conversation: ChatConversation
      try {
        conversation = new ChatConversation({
          tokenizer: model.tokenizer,
          template,
          session: new Session(ctx),
          nCtx: N_CTX,
          contextShift: false,
          params: {sampling: resolveSamplingOptions({temperature: 0, seed: 0}), maxTokens},
          system: SYSTEM,
          modelName: row.id,
        })
      } catch (error) {
        ctx.dispose()
        throw error
      }
      try {
        let turn
        try {
          turn = conversation.send(USER, env.signal)
        } catch (error) {
          return fail(`template ${origin}: the conversation does not render: ${(error as Error).message}`)
        }
        const r = await turn.result
        const tokens = r.tokens
        const reply: ChatReply = {
          text: r.reply,
          tokens,
          finishReason: r.finishReason,
          ...decodePieces(model.tokenizer, tokens),
        }
        const why = chatReplyVerdict(reply, strictUtf8)
        const ms = Math.round(performance.now() - t0)
        const what = `template ${origin}: 2 messages render to ${r.promptTokens.length} prompt tokens; greedy reply of ${tokens.length} tokens`
        if (why) return fail(`${what}: ${why}`)
        const utf8 = utf8Valid(reply.bytes) ? 'valid UTF-8' : 'not valid UTF-8'
        const shown = reply.text.length > 60 ? `${reply.text.slice(0, 60)}…` : reply.text
        return pass(`${what}, ${reply.text.length} characters ${JSON.stringify(shown)}, ended on ${r.finishReason}; ${utf8}; ${ms} ms`)
      } finally {
        await conversation.stop()
        ctx.dispose()
      }
    } finally {
      model.dispose()
    }
  },
}

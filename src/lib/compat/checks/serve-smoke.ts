/**
 * `serve_smoke`: the server, started in-process on a free loopback port, answers the official
 * `openai` client: it lists the model, gives a greedy chat completion, and streams one whose text
 * (and finish reason) is the same. The anchor is the client: it parses every response and stream.
 */
import {type CheckClass, fail, numberParam, pass} from '../types.js'
import {errorText, openaiMissing, quote, SERVE_PARAMS, since, withServer} from './serve-common.js'

const MESSAGES = [
  {role: 'system' as const, content: 'You are a helpful assistant.'},
  {role: 'user' as const, content: 'Tell me a story.'},
]

/** One reply as the client gives it: the message text and the finish reason. */
export interface ServedReply {
  readonly text: string | null
  readonly finishReason: string | null
}

/**
 * Why a non-streamed and a streamed greedy reply do not make a passing pair, or undefined when
 * they do: both end as a reply ends (stop or length) and the streamed deltas join to the same text.
 */
export function streamVerdict(whole: ServedReply, streamed: ServedReply): string | undefined {
  if (typeof whole.text !== 'string') return `the completion has no text content (${quote(whole.text)})`
  if (whole.finishReason !== 'stop' && whole.finishReason !== 'length')
    return `the completion ended with finish_reason ${String(whole.finishReason)}, not stop or length`
  if (streamed.text !== whole.text) {
    const s = streamed.text ?? ''
    let at = 0
    while (at < s.length && at < whole.text.length && s[at] === whole.text[at]) at++
    return `the streamed text ${quote(streamed.text)} differs from the non-streamed ${quote(whole.text)} from character ${at}`
  }
  if (streamed.finishReason !== whole.finishReason)
    return `the stream ended with finish_reason ${String(streamed.finishReason)}, the completion with ${String(whole.finishReason)}`
  return undefined
}

export const serveSmoke: CheckClass = {
  name: 'serve_smoke',
  summary:
    'the server started in-process answers the official openai client: it lists the model, a greedy chat completion ends, and the streamed one is the same text',
  params: {
    ...SERVE_PARAMS,
    maxTokens: {type: 'integer', minimum: 1, description: 'max_tokens of both completions (default 8)'},
  },
  async when() {
    return openaiMissing()
  },
  async run(row, params, env) {
    const maxTokens = numberParam(params, 'maxTokens', 8)
    return withServer(row, params, env, async ({client, templateOrigin, startMs}) => {
      const opts = {signal: env.signal}
      let t0 = performance.now()
      let ids: string[]
      try {
        ids = (await client.models.list(opts)).data.map((m) => m.id)
      } catch (error) {
        return fail(`GET /v1/models failed: ${errorText(error)}`)
      }
      const listMs = since(t0)
      const model = ids[0]
      if (model === undefined) return fail('GET /v1/models lists no model')
      const body = {model, messages: MESSAGES, max_tokens: maxTokens, temperature: 0}
      let whole: ServedReply
      t0 = performance.now()
      try {
        const r = await client.chat.completions.create(body, opts)
        whole = {text: r.choices[0]?.message.content ?? null, finishReason: r.choices[0]?.finish_reason ?? null}
      } catch (error) {
        return fail(`the chat completion failed: ${errorText(error)}`)
      }
      const completionMs = since(t0)
      let text = ''
      let finishReason: string | null = null
      t0 = performance.now()
      try {
        const stream = await client.chat.completions.create({...body, stream: true}, opts)
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? ''
          finishReason = chunk.choices[0]?.finish_reason ?? finishReason
        }
      } catch (error) {
        return fail(`the streamed chat completion failed: ${errorText(error)}`)
      }
      const streamMs = since(t0)
      const why = streamVerdict(whole, {text, finishReason})
      const timings = `start ${startMs} ms, list ${listMs} ms, completion ${completionMs} ms, stream ${streamMs} ms`
      if (why) return fail(`model ${model}: ${why} (${timings})`)
      return pass(
        `model ${model} (template ${templateOrigin}): reply ${quote(whole.text)} (finish ${whole.finishReason}), streamed the same; ${timings}`,
      )
    })
  },
}

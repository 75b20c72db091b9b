/**
 * OpenAI's chat and text completions: they share everything but the request's prompt and the
 * response's shape. `n` choices run one after another on the prompt's KV (the scheduler hands the
 * next choice the slot that holds the prompt, so it is evaluated once), choice i seeded with the
 * request's seed + i, so each choice is reproducible on its own. Streams send the choices in turn,
 * each chunk naming its index.
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {AnswerParser, parseAnswer} from '../tools/index.js'
import {toApiError} from './api-error.js'
import {type GenerationDelta, runGeneration} from './generation.js'
import {
  chatChunk,
  chatCompletion,
  chatFinishReason,
  chatLogprobs,
  type ChoiceResult,
  completionId,
  completionLogprobs,
  eventDeltas,
  type ResponseMeta,
  textChunk,
  textCompletion,
  usageChunk,
  usageOfChoices,
} from './openai-format.js'
import {type PreparedRequest, prepareChat, prepareCompletion} from './requests.js'
import {SseWriter} from './sse.js'
import type {ServerState} from './state.js'

type Kind = 'chat' | 'text'

/** The request for choice i: the same prompt, the seed moved on by i. */
function choiceRequest(p: PreparedRequest, i: number): PreparedRequest {
  // Seeds are 64-bit: seed + i wraps as the sampler's unsigned seed would.
  return i === 0 ? p : {...p, sampling: {...p.sampling, seed: BigInt.asUintN(64, p.sampling.seed + BigInt(i))}}
}

export async function completionsRoute(s: ServerState, kind: Kind, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const prepared = await (kind === 'chat' ? prepareChat(s.env, req.body) : prepareCompletion(s.env, req.body))
  const meta: ResponseMeta = {
    id: completionId(kind === 'chat' ? 'chatcmpl' : 'cmpl'),
    created: Math.floor(Date.now() / 1000),
    model: s.env.modelId,
    systemFingerprint: s.env.systemFingerprint,
  }
  const life = s.track(req, reply)
  try {
    if (!prepared.stream) {
      const results: ChoiceResult[] = []
      for (let i = 0; i < prepared.n; i++) {
        const outcome = await runGeneration(s.generation, choiceRequest(prepared, i), life.signal)
        results.push({outcome, answer: kind === 'chat' && prepared.answer ? parseAnswer(prepared.answer, outcome.text) : undefined})
      }
      return kind === 'chat' ? chatCompletion(meta, results, prepared.logprobs) : textCompletion(meta, results, prepared.logprobs)
    }
    reply.hijack()
    const sse = new SseWriter(reply.raw)
    try {
      const results: ChoiceResult[] = []
      for (let i = 0; i < prepared.n; i++) results.push(await streamChoice(s, kind, choiceRequest(prepared, i), i, meta, life.signal, sse))
      if (prepared.includeUsage)
        sse.send(usageChunk(meta, kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', usageOfChoices(results)))
      sse.done()
    } catch (error) {
      sse.fail(toApiError(error))
    }
    return reply
  } finally {
    life.end()
  }
}

/** One choice's chunks: its role chunk, its text (or, read by the tools parser, text, thinking and calls), its finish. */
async function streamChoice(
  s: ServerState,
  kind: Kind,
  p: PreparedRequest,
  index: number,
  meta: ResponseMeta,
  signal: AbortSignal,
  sse: SseWriter,
): Promise<ChoiceResult> {
  const usage = p.includeUsage
  let opened = false
  const open = () => {
    if (opened) return
    opened = true
    if (kind === 'chat') sse.send(chatChunk(meta, {role: 'assistant', content: ''}, {index, usage}))
  }
  const parser = kind === 'chat' && p.answer ? new AnswerParser(p.answer) : undefined
  const sendEvents = (events: ReturnType<AnswerParser['push']>, logprobs: unknown) => {
    const deltas = events.flatMap(eventDeltas)
    // Log-probabilities go with the first chunk of the text they came with, or alone while text is held back.
    if (deltas.length === 0 && logprobs !== null) deltas.push({})
    deltas.forEach((delta, i) => sse.send(chatChunk(meta, delta, {index, logprobs: i === 0 ? logprobs : null, usage})))
  }
  const onDelta = (d: GenerationDelta) => {
    open()
    if (parser) sendEvents(parser.push(d.text), p.logprobs ? chatLogprobs(d.tokens) : null)
    else if (kind === 'chat')
      sse.send(chatChunk(meta, {content: d.text}, {index, logprobs: p.logprobs ? chatLogprobs(d.tokens) : null, usage}))
    else sse.send(textChunk(meta, d.text, {index, logprobs: p.logprobs ? completionLogprobs(d.tokens) : null, usage}))
  }
  const outcome = await runGeneration(s.generation, p, signal, onDelta)
  open()
  if (parser) sendEvents(parser.finish(), null)
  const answer = parser?.result()
  if (kind === 'chat') sse.send(chatChunk(meta, {}, {index, finishReason: chatFinishReason(outcome, answer), usage}))
  else sse.send(textChunk(meta, '', {index, finishReason: outcome.finishReason, usage}))
  return {outcome, answer}
}

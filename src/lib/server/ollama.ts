/**
 * Ollama's API (`/api/*`) over the same slots, template, sampler and prefix cache as the OpenAI and
 * Anthropic routes, so tools that speak only Ollama (desktop apps, the `ollama` npm client) can use
 * `runner serve`. Chat and generate stream NDJSON by default, as Ollama does; every error on these
 * paths is Ollama's `{"error": "message"}` (./error-shape.ts). `/api/embed` comes with the
 * embeddings work.
 */
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {FastifyReply, FastifyRequest} from 'fastify'

import {findPackageRoot} from '../engine/index.js'
import {SAMPLING_DEFAULTS} from '../sampling/index.js'
import {toApiError} from './api-error.js'
import {type AnswerEvent, AnswerParser, parseAnswer} from '../tools/index.js'
import {runGeneration, type TokenReport} from './generation.js'
import {parseKeepAlive} from './keep-alive.js'
import {NdjsonWriter} from './ndjson.js'
import {type OllamaKind, type OllamaMeta, ollamaChunk, ollamaDone, ollamaLoaded} from './ollama-format.js'
import {modelFacts, modelInfo, type OllamaModelFacts} from './ollama-model.js'
import {type OllamaGeneration, ollamaName, prepareOllamaChat, prepareOllamaGenerate, prepareShow} from './ollama-requests.js'
import type {Route} from './routes.js'
import type {ServerCore, ServerState} from './state.js'

export const OLLAMA_ROUTES: readonly Route[] = [
  {
    method: 'POST',
    url: '/api/chat',
    model: 'required',
    keepAlive: true,
    auth: true,
    summary: "Ollama's chat, streamed as NDJSON unless stream is false",
    handler: (s, q, r) => generationRoute(s, 'chat', q, r),
  },
  {
    method: 'POST',
    url: '/api/generate',
    model: 'required',
    keepAlive: true,
    auth: true,
    summary: "Ollama's generate (one prompt), streamed as NDJSON unless stream is false",
    handler: (s, q, r) => generationRoute(s, 'generate', q, r),
  },
  {
    method: 'GET',
    url: '/api/tags',
    model: 'none',
    auth: true,
    summary: 'the models this server serves, as Ollama lists local models',
    handler: async (core) => tags(core),
  },
  {
    method: 'POST',
    url: '/api/show',
    model: 'required',
    auth: true,
    summary: "the served model's details, metadata and template (Ollama)",
    handler: (s, q) => show(s, q.body),
  },
  {
    method: 'GET',
    url: '/api/ps',
    model: 'none',
    auth: true,
    summary: 'the loaded models and when each unloads (Ollama)',
    handler: async (core) => ps(core),
  },
  {
    method: 'GET',
    url: '/api/version',
    model: 'none',
    auth: false,
    summary: "this server's version (Ollama's route)",
    handler: async () => ({version: await version()}),
  },
]

async function generationRoute(s: ServerState, kind: OllamaKind, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const arrivedAt = (req as FastifyRequest & {startedAt?: number}).startedAt ?? performance.now()
  const p = await (kind === 'chat' ? prepareOllamaChat(s.env, req.body) : prepareOllamaGenerate(s.env, req.body))
  // Ollama echoes the name the client used ("stories260K" or "stories260K:latest").
  const meta: OllamaMeta = {kind, model: (req.body as {model: string}).model, loadMs: s.loadMs}
  if (p.load) {
    // An empty request loads the model; with keep_alive 0 it unloads it once this request ends (Ollama's "unload").
    const reason = parseKeepAlive((req.body as {keep_alive?: unknown}).keep_alive) === 0 ? 'unload' : 'load'
    if (!p.stream) return ollamaLoaded(meta, reason)
    reply.hijack()
    new NdjsonWriter(reply.raw).end(ollamaLoaded(meta, reason))
    return reply
  }
  const life = s.track(req, reply)
  try {
    if (!p.stream) {
      const o = await runGeneration(s.generation, p, life.signal)
      if (!p.answer) return ollamaDone(meta, o, o.text, arrivedAt, p.logprobs)
      const answer = parseAnswer(p.answer, o.text)
      return ollamaDone(meta, o, answer.content, arrivedAt, p.logprobs, answer.calls)
    }
    reply.hijack()
    await stream(s, p, meta, arrivedAt, life.signal, new NdjsonWriter(reply.raw))
    return reply
  } finally {
    life.end()
  }
}

async function stream(s: ServerState, p: OllamaGeneration, meta: OllamaMeta, arrivedAt: number, signal: AbortSignal, out: NdjsonWriter) {
  try {
    // With tools, the answer is read as it comes: text as it is final, each call once whole.
    const parser = p.answer ? new AnswerParser(p.answer) : undefined
    const send = (events: readonly AnswerEvent[], tokens: readonly TokenReport[] | undefined) => {
      const text = events.flatMap((e) => (e.type === 'call' ? [] : [e.text])).join('')
      const calls = events.flatMap((e) => (e.type === 'call' ? [e.call] : []))
      if (text || calls.length > 0 || tokens) out.send(ollamaChunk(meta, text, tokens, calls))
    }
    const o = await runGeneration(s.generation, p, signal, (d) => {
      const tokens = p.logprobs ? d.tokens : undefined
      if (parser) send(parser.push(d.text), tokens)
      // A delta with no text (bytes of an unfinished character) matters only for its log-probabilities.
      else if (d.text || p.logprobs) out.send(ollamaChunk(meta, d.text, tokens))
    })
    if (parser) send(parser.finish(), undefined)
    // The pieces carried the text and the log-probabilities; the last object carries the totals.
    out.end(ollamaDone(meta, o, '', arrivedAt, false))
  } catch (error) {
    out.fail(toApiError(error))
  }
}

/** Ollama's name for a model and what every listing repeats about it. */
function listed(id: string, f: OllamaModelFacts) {
  const name = ollamaName(id)
  return {name, model: name, size: f.size, digest: f.digest, details: f.details}
}

async function facts(s: ServerState): Promise<OllamaModelFacts> {
  return modelFacts(s.gguf)
}

/** Every model the server serves, loaded or not (headers only: readGgufModel maps no weights). */
async function tags(core: ServerCore) {
  const models = []
  for (const entry of core.fleet.entries) {
    const gguf = core.fleet.hostOf(entry)?.model.gguf ?? core.fleet.header(entry)
    if (!gguf) continue
    const f = await modelFacts(gguf)
    models.push({...listed(entry.id, f), modified_at: f.modifiedAt})
  }
  return {models}
}

async function ps(core: ServerCore) {
  const models = []
  for (const host of core.fleet.loadedHosts()) {
    const f = await modelFacts(host.model.gguf)
    // In memory: the mapped weights and every slot's KV cache; nothing is on a GPU.
    models.push({
      ...listed(host.env.modelId, f),
      size: host.bytes,
      expires_at: core.fleet.expiry(host.entry),
      size_vram: 0,
      context_length: host.env.nCtx,
    })
  }
  return {models}
}

/** The defaults a request gets here, as Ollama's `parameters` lists a model's (name, padding, value). */
function parameters(s: ServerState): string {
  const d = SAMPLING_DEFAULTS
  const rows: Array<[string, number]> = [
    ['num_ctx', s.env.nCtx],
    ['temperature', d.temperature],
    ['top_k', d.topK],
    ['top_p', d.topP],
    ['min_p', d.minP],
    ['repeat_penalty', d.repeatPenalty],
    ['repeat_last_n', d.penaltyLastN],
  ]
  return rows.map(([k, v]) => `${k.padEnd(30)} ${v}`).join('\n')
}

async function show(s: ServerState, raw: unknown) {
  const {verbose} = prepareShow(s.env, raw)
  const f = await facts(s)
  const template = s.env.template
  const modelfile = [
    '# Modelfile generated by runner serve: the served file and the defaults of this server.',
    `# The chat template is Jinja (the model's own, or --chat-template): see "template"; Ollama's TEMPLATE takes Go templates.`,
    `FROM ${s.gguf.path}`,
    ...parameters(s)
      .split('\n')
      .map((line) => `PARAMETER ${line.replace(/ +/, ' ')}`),
  ].join('\n')
  const license = s.gguf.metadata.get('general.license')?.value
  return {
    license: typeof license === 'string' ? license : '',
    modelfile,
    parameters: parameters(s),
    template: template.source,
    system: '',
    details: f.details,
    model_info: modelInfo(s.gguf, f.parameterCount, verbose),
    capabilities: ['completion', 'tools'],
    modified_at: f.modifiedAt,
  }
}

let versionText: Promise<string> | undefined

/** runner's own version (package.json): this is not Ollama, and says so. */
function version(): Promise<string> {
  versionText ??= readFile(join(findPackageRoot(), 'package.json'), 'utf8').then(
    (text) => String((JSON.parse(text) as {version?: unknown}).version ?? 'unknown'),
    () => 'unknown',
  )
  return versionText
}

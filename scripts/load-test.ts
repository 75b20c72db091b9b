/**
 * Load test for `runner serve` (issue #8): C concurrent streaming clients, each sending R chat
 * requests one after another through the official `openai` client, against a server this script
 * starts on loopback (the compiled CLI, `node bin/run.js serve --port 0`) and stops at the end.
 *
 * Checks: zero errors, every stream complete (a finish_reason and a usage chunk), no slot leaked
 * (/metrics shows no busy slot and an empty queue afterwards). Reports aggregate generated tokens
 * per second (sum of completion tokens / wall time) and the p50/p99 time to first token (request
 * sent → first content chunk, queueing included). Exits 1 when a check fails.
 *
 *   npx tsx scripts/load-test.ts --model ../shared/models/stories260K.gguf --clients 32 --requests 4 --parallel 4
 *   npx tsx scripts/load-test.ts --url http://127.0.0.1:8080 --model-id stories260K   (a server already running)
 */
import {resolve} from 'node:path'
import {parseArgs} from 'node:util'

import OpenAI from 'openai'

import {ROOT, startServeProcess} from './serve-process.js'

const {values: args} = parseArgs({
  options: {
    model: {type: 'string', default: resolve(ROOT, '../shared/models/stories260K.gguf')},
    url: {type: 'string'},
    'model-id': {type: 'string'},
    clients: {type: 'string', default: '32'},
    requests: {type: 'string', default: '4'},
    parallel: {type: 'string', default: '4'},
    ctx: {type: 'string', default: '512'},
    'max-tokens': {type: 'string', default: '128'},
    json: {type: 'boolean', default: false},
  },
})

const clients = Number(args.clients)
const requests = Number(args.requests)
const maxTokens = Number(args['max-tokens'])

const PROMPTS = [
  'Tell me a story about a dog.',
  'Once upon a time',
  'Lily found a red ball.',
  'Write about the sun and the moon.',
  'Tom and his cat went to the park.',
]

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!
}

async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return line === undefined ? NaN : Number(line.split(' ')[1])
}

async function main(): Promise<void> {
  const server = args.url ? undefined : await startServeProcess(args.model!, ['--parallel', args.parallel!, '--ctx', args.ctx!])
  const url = args.url ?? server!.url
  let exitCode = 0
  try {
    const probe = new OpenAI({baseURL: `${url}/v1`, apiKey: 'load-test', maxRetries: 0})
    const modelId = args['model-id'] ?? (await probe.models.list()).data[0]!.id
    const ttfts: number[] = []
    const errors: string[] = []
    let completionTokens = 0
    let incomplete = 0
    const t0 = performance.now()
    await Promise.all(
      Array.from({length: clients}, async (_, c) => {
        const client = new OpenAI({baseURL: `${url}/v1`, apiKey: 'load-test', maxRetries: 0, timeout: 600_000})
        for (let r = 0; r < requests; r++) {
          const sent = performance.now()
          try {
            const stream = await client.chat.completions.create({
              model: modelId,
              messages: [{role: 'user', content: PROMPTS[(c + r) % PROMPTS.length]!}],
              max_tokens: maxTokens,
              temperature: 0.8,
              seed: c * 1000 + r,
              stream: true,
              stream_options: {include_usage: true},
            })
            let first = true
            let finish: string | null = null
            let usage: OpenAI.CompletionUsage | undefined
            for await (const chunk of stream) {
              const choice = chunk.choices[0]
              if (first && choice?.delta.content) {
                ttfts.push(performance.now() - sent)
                first = false
              }
              finish = choice?.finish_reason ?? finish
              if (chunk.usage) usage = chunk.usage
            }
            if (!finish || !usage) incomplete++
            else completionTokens += usage.completion_tokens
          } catch (error) {
            errors.push(String(error))
          }
        }
      }),
    )
    const wallS = (performance.now() - t0) / 1000
    // Slots free and the queue empty once every response has ended.
    const busy = await metricValue(url, 'runner_slots_busy')
    const queued = await metricValue(url, 'runner_queue_depth')
    ttfts.sort((a, b) => a - b)
    const summary = {
      clients,
      requestsPerClient: requests,
      parallel: Number(args.parallel),
      maxTokens,
      requests: clients * requests,
      errors: errors.length,
      incompleteStreams: incomplete,
      slotsBusyAfter: busy,
      queueDepthAfter: queued,
      wallSeconds: Math.round(wallS * 100) / 100,
      completionTokens,
      aggregateTokensPerSecond: Math.round(completionTokens / wallS),
      ttftMsP50: Math.round(quantile(ttfts, 0.5) * 10) / 10,
      ttftMsP99: Math.round(quantile(ttfts, 0.99) * 10) / 10,
    }
    if (args.json) console.log(JSON.stringify(summary))
    else {
      console.log(
        `${summary.requests} streaming requests (${clients} clients × ${requests}), --parallel ${summary.parallel}, max_tokens ${maxTokens}: ` +
          `${summary.errors} errors, ${summary.incompleteStreams} incomplete, slots busy after ${busy}, queue after ${queued}\n` +
          `${completionTokens} tokens in ${summary.wallSeconds} s = ${summary.aggregateTokensPerSecond} tok/s aggregate; ` +
          `time to first token p50 ${summary.ttftMsP50} ms, p99 ${summary.ttftMsP99} ms`,
      )
    }
    for (const e of errors.slice(0, 5)) console.error(`error: ${e}`)
    if (errors.length > 0 || incomplete > 0 || busy !== 0 || queued !== 0) exitCode = 1
  } finally {
    if (server) {
      const code = await server.stop()
      if (code !== 0) {
        console.error(`runner serve exited with ${code} after SIGTERM`)
        exitCode = 1
      }
    }
  }
  process.exitCode = exitCode
}

await main()

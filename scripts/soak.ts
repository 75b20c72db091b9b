/**
 * Soak test for `runner serve` (issue #18): a server this script starts on loopback (the compiled
 * CLI) under a bounded mix for a fixed time, its resident memory sampled from /proc:
 *
 * - 4 streaming clients through the official `openai` client, one request after another, a third
 *   of them cancelled mid-stream (the client aborts after a few chunks);
 * - 1 stalling client: opens a connection, sends headers and part of a body, and waits (the server
 *   must cut it with 408 after --body-timeout; then it starts again);
 * - 1 hostile client: a burst of refusals every few seconds (130,000 tiny messages, a 1 MB stop, a
 *   body nested 10,000 levels, a wrong method, a bad Content-Length).
 *
 * Reports requests, errors by kind, stalls cut, and RSS at the start, after the warm-up (the first
 * fifth of the run, at most a minute, under the same mix: heaps and JIT code grow to their working
 * size there), at the end and its maximum; exits 1 when a well-formed request failed, /health stopped answering within 2 s, a
 * stall was not cut, or RSS grew by more than --max-growth MiB.
 *
 *   npx tsx scripts/soak.ts --minutes 15
 *   npx tsx scripts/soak.ts --minutes 1 --json
 */
import {readFileSync} from 'node:fs'
import {connect} from 'node:net'
import {cpus} from 'node:os'
import {resolve} from 'node:path'
import {parseArgs} from 'node:util'

import OpenAI from 'openai'

import {ROOT, startServeProcess} from './serve-process.js'

const {values: args} = parseArgs({
  options: {
    model: {type: 'string', default: resolve(ROOT, '../shared/models/stories260K.gguf')},
    minutes: {type: 'string', default: '15'},
    clients: {type: 'string', default: '4'},
    parallel: {type: 'string', default: '2'},
    'body-timeout': {type: 'string', default: '5'},
    'max-growth': {type: 'string', default: '64'},
    json: {type: 'boolean', default: false},
  },
})

const durationMs = Number(args.minutes) * 60_000
const stats = {
  streams: 0,
  completed: 0,
  cancelled: 0,
  failed: 0,
  failures: {} as Record<string, number>,
  stallsCut: 0,
  stallsUncut: 0,
  hostileSent: 0,
  hostileAnswered: 0,
  healthChecks: 0,
  healthSlowest: 0,
  healthFailed: 0,
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024
}

const PROMPTS = ['Tell me a story about a dog.', 'Once upon a time', 'Lily found a red ball.', 'Tom and his cat went to the park.']

async function streamingClient(client: OpenAI, i: number, until: number): Promise<void> {
  for (let n = 0; performance.now() < until; n++) {
    const cancel = (n + i) % 3 === 0
    const controller = new AbortController()
    stats.streams++
    try {
      const stream = await client.chat.completions.create(
        {
          model: 'stories260K',
          messages: [{role: 'user', content: PROMPTS[(n + i) % PROMPTS.length]!}],
          max_tokens: 16 + ((n * 7 + i) % 48),
          stream: true,
          stream_options: {include_usage: true},
        },
        {signal: controller.signal},
      )
      let chunks = 0
      let usage = false
      for await (const chunk of stream) {
        chunks++
        if (chunk.usage) usage = true
        if (cancel && chunks === 3) {
          // Abort and leave the loop: the SDK may go on reading what was buffered, then wait for good.
          controller.abort()
          break
        }
      }
      if (cancel) stats.cancelled++
      else if (usage) stats.completed++
      else throw new Error('a stream ended without its usage chunk')
    } catch (error) {
      if (cancel && controller.signal.aborted) stats.cancelled++
      else {
        stats.failed++
        const key = (error as Error).message.slice(0, 80)
        stats.failures[key] = (stats.failures[key] ?? 0) + 1
      }
    }
  }
}

/** Headers and half a body, then nothing: the server must answer 408 and close. */
function stallOnce(url: string, limitMs: number): Promise<boolean> {
  const {hostname, port} = new URL(url)
  return new Promise((resolveCut) => {
    const s = connect(Number(port), hostname, () =>
      s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"mo'),
    )
    let text = ''
    const timer = setTimeout(() => {
      s.destroy()
      resolveCut(false)
    }, limitMs)
    s.on('data', (d) => (text += d.toString('latin1')))
    s.on('close', () => {
      clearTimeout(timer)
      resolveCut(/^HTTP\/1\.1 408/.test(text))
    })
    s.on('error', () => {})
  })
}

async function stallingClient(url: string, until: number): Promise<void> {
  const limitMs = (Number(args['body-timeout']) + 5) * 1000
  while (performance.now() < until) {
    if (await stallOnce(url, limitMs)) stats.stallsCut++
    else stats.stallsUncut++
  }
}

/** Send raw bytes; resolves to what came back before the server closed (or 5 s passed). */
function rawOnce(url: string, request: string): Promise<string> {
  const {hostname, port} = new URL(url)
  return new Promise((done) => {
    let text = ''
    const s = connect(Number(port), hostname, () => s.write(request))
    s.on('data', (d) => (text += d.toString('latin1')))
    s.on('close', () => done(text))
    s.on('error', () => done(text))
    setTimeout(() => s.destroy(), 5000)
  })
}

async function hostileClient(url: string, until: number): Promise<void> {
  const json = (body: unknown) => ({method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify(body)})
  const many = json({model: 'stories260K', messages: Array.from({length: 130_000}, () => ({role: 'user', content: 'x'}))})
  const bigStop = json({model: 'stories260K', messages: [{role: 'user', content: 'x'}], stop: 'x'.repeat(1 << 20)})
  const deep = {method: 'POST', headers: {'content-type': 'application/json'}, body: `{"stop": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`}
  while (performance.now() < until) {
    for (const init of [many, bigStop, deep, {method: 'GET'}]) {
      stats.hostileSent++
      const r = await fetch(`${url}/v1/chat/completions`, init).catch(() => undefined)
      if (r && r.status >= 400 && r.status < 500) stats.hostileAnswered++
      await r?.arrayBuffer().catch(() => undefined)
    }
    stats.hostileSent++
    const reply = await rawOnce(url, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}')
    if (/^HTTP\/1\.1 400 /.test(reply)) stats.hostileAnswered++
    await new Promise((r) => setTimeout(r, 3000))
  }
}

async function healthWatch(url: string, until: number): Promise<void> {
  while (performance.now() < until) {
    const t0 = performance.now()
    const ok = await fetch(`${url}/health`, {signal: AbortSignal.timeout(2000)})
      .then((r) => r.ok)
      .catch(() => false)
    stats.healthChecks++
    stats.healthSlowest = Math.max(stats.healthSlowest, performance.now() - t0)
    if (!ok) stats.healthFailed++
    await new Promise((r) => setTimeout(r, 1000))
  }
}

const {child, url, stop} = await startServeProcess(args.model!, [
  '--parallel',
  args.parallel!,
  '--ctx',
  '256',
  '--threads',
  '1',
  '--body-timeout',
  args['body-timeout']!,
  '--headers-timeout',
  args['body-timeout']!,
])
const client = new OpenAI({baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120_000})
// Warm-up: the first requests fill caches and the JIT; RSS is measured from after them.
await Promise.all(
  PROMPTS.map((p) => client.chat.completions.create({model: 'stories260K', messages: [{role: 'user', content: p}], max_tokens: 8})),
)
const samples: Array<{atS: number; rssMiB: number}> = []
const t0 = performance.now()
const until = t0 + durationMs
const sampler = setInterval(() => samples.push({atS: Math.round((performance.now() - t0) / 1000), rssMiB: rssMiB(child.pid!)}), 5_000)
samples.push({atS: 0, rssMiB: rssMiB(child.pid!)})
const pending = new Set<string>()
const tracked = (name: string, p: Promise<void>) => {
  pending.add(name)
  return p.finally(() => pending.delete(name))
}
const watchdog = setInterval(() => {
  if (performance.now() > until + 30_000)
    void fetch(`${url}/health`)
      .then((r) => r.text())
      .then((h) => console.error(`soak: still waiting for ${[...pending].join(', ')}; /health ${h}; ${JSON.stringify(stats)}`))
}, 10_000)
await Promise.all([
  ...Array.from({length: Number(args.clients)}, (_, i) => tracked(`stream ${i}`, streamingClient(client, i, until))),
  tracked('staller', stallingClient(url, until)),
  tracked('hostile', hostileClient(url, until)),
  tracked('health', healthWatch(url, until)),
])
clearInterval(watchdog)
clearInterval(sampler)
// Let the last cancelled requests settle, then the final reading.
await new Promise((r) => setTimeout(r, 2000))
samples.push({atS: Math.round((performance.now() - t0) / 1000), rssMiB: rssMiB(child.pid!)})
const code = await stop()

// The first sample at or after the warm-up: growth is measured from the working size, not from an idle server.
const warmupS = Math.min(60, durationMs / 5000)
const start = (samples.find((x) => x.atS >= warmupS) ?? samples.at(-1)!).rssMiB
const end = samples.at(-1)!.rssMiB
const report = {
  cpu: cpus()[0]?.model ?? 'unknown',
  minutes: Number(args.minutes),
  ...stats,
  rssIdleMiB: Math.round(samples[0]!.rssMiB),
  warmupSeconds: Math.round(warmupS),
  rssStartMiB: Math.round(start),
  rssEndMiB: Math.round(end),
  rssMaxMiB: Math.round(Math.max(...samples.map((s) => s.rssMiB))),
  exitCode: code,
}
const ok =
  stats.failed === 0 &&
  stats.healthFailed === 0 &&
  stats.stallsUncut === 0 &&
  stats.hostileAnswered === stats.hostileSent &&
  end - start <= Number(args['max-growth']) &&
  code === 0
if (args.json) console.log(JSON.stringify({...report, samples, ok}))
else {
  for (const [k, v] of Object.entries(report)) console.log(`${k.padEnd(16)} ${typeof v === 'object' ? JSON.stringify(v) : v}`)
  console.log(ok ? 'soak: ok' : 'soak: FAILED')
}
process.exit(ok ? 0 : 1)

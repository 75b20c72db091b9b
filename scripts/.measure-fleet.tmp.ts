// temporary measurement (not committed)
import {startServer} from '../src/lib/server/index.js'
const SMOL = '/tmp/runner-bench/smollm2-shape-e576-l30-h9-kv3-ff1536-v512-s1-q8_0.gguf'
const STORIES = '/work/shared/models/stories260K.gguf'
const outside = () => {
  const m = process.memoryUsage()
  return m.rss - m.heapTotal
}
const MB = (n: number) => (n / 2 ** 20).toFixed(1)
const s = await startServer({host: '127.0.0.1', port: 0, models: [`smol=${SMOL}`, `stories=${STORIES}`], nCtx: 512, threadsPerSlot: 1})
const req = async (model: string) => {
  const t0 = performance.now()
  const r = await fetch(`${s.url}/v1/completions`, {
    method: 'POST',
    headers: {'content-type': 'application/json'},
    body: JSON.stringify({model, prompt: 'Once upon a time', max_tokens: 1, temperature: 0}),
  })
  await r.json()
  return performance.now() - t0
}
const rows: string[] = []
for (let rep = 0; rep < 3; rep++) {
  const before = outside()
  const cold = await req('smol')
  const loaded = outside()
  const warm = await req('smol')
  const t0 = performance.now()
  const u = await fetch(`${s.url}/v1/models/smol/unload`, {method: 'POST'})
  await u.json()
  const unloadMs = performance.now() - t0
  const after = outside()
  rows.push(`rep ${rep}: cold ${cold.toFixed(0)} ms, warm ${warm.toFixed(0)} ms, unload ${unloadMs.toFixed(0)} ms; outside-heap RSS ${MB(before)} -> ${MB(loaded)} -> ${MB(after)} MiB`)
}
console.log(rows.join('\n'))
await s.close()

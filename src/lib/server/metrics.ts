/**
 * Prometheus text exposition (format 0.0.4): every sample under its own HELP and TYPE lines.
 * Counters are kept here; gauges (queue depth, busy slots, cache bytes, RSS) are read at scrape
 * time. Scrapes of /metrics are not counted as requests.
 */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

export interface GaugeReadings {
  readonly queueDepth: number
  readonly slotsBusy: number
  readonly slotsTotal: number
  readonly prefixCacheTokens: number
  readonly prefixCacheBytes: number
  /** The slots' decode group (absent without batched decode): its steps, and the tokens in them. */
  readonly batchedSteps?: number
  readonly batchedTokens?: number
  /** Models loaded now, and models the server can serve (./fleet.ts). */
  readonly modelsLoaded: number
  readonly modelsServable: number
}

export class Metrics {
  private readonly requests = new Map<string, number>()
  promptTokens = 0
  generatedTokens = 0
  cachedTokens = 0
  generationSeconds = 0
  prefixHits = 0
  prefixMisses = 0
  /** The draft source of speculative decoding (absent: none), and what its drafts came to. */
  speculation: string | undefined
  draftTokens = 0
  draftAccepted = 0
  draftSteps = 0
  /** Model loads that finished, that failed, and unloads by reason (./fleet.ts). */
  modelLoads = 0
  modelLoadFailures = 0
  private readonly unloads = new Map<string, number>()

  constructor(private readonly gauges: () => GaugeReadings) {}

  countRequest(route: string, status: number): void {
    const key = JSON.stringify([route, String(status)])
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1)
  }

  /** One finished generation's token counts and time. */
  recordGeneration(prompt: number, generated: number, cached: number, seconds: number): void {
    this.promptTokens += prompt
    this.generatedTokens += generated
    this.cachedTokens += cached
    this.generationSeconds += seconds
  }

  /** One generation's drafts: tokens drafted, accepted by the model, and verify steps. */
  recordDraft(drafted: number, accepted: number, steps: number): void {
    this.draftTokens += drafted
    this.draftAccepted += accepted
    this.draftSteps += steps
  }

  /** Batched-decode counters of decode groups that are gone (their models unloaded): the counters never go back. */
  private retired = {steps: 0, tokens: 0}

  retireBatched(stats: {readonly steps: number; readonly tokens: number}): void {
    this.retired = {steps: this.retired.steps + stats.steps, tokens: this.retired.tokens + stats.tokens}
  }

  recordUnload(reason: string): void {
    this.unloads.set(reason, (this.unloads.get(reason) ?? 0) + 1)
  }

  recordPrefix(reused: number): void {
    if (reused > 0) this.prefixHits++
    else this.prefixMisses++
  }

  render(): string {
    const g = this.gauges()
    const out: string[] = []
    const metric = (name: string, type: 'counter' | 'gauge', help: string, samples: Array<[labels: string, value: number]>) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
      for (const [labels, value] of samples) out.push(`${name}${labels} ${formatValue(value)}`)
    }
    const requestSamples: Array<[string, number]> = [...this.requests.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, n]) => {
        const [route, status] = JSON.parse(key) as [string, string]
        return [`{route="${escapeLabel(route)}",status="${status}"}`, n]
      })
    metric(
      'runner_http_requests_total',
      'counter',
      'HTTP requests answered, by route and status (scrapes of /metrics excluded).',
      requestSamples,
    )
    metric('runner_prompt_tokens_total', 'counter', 'Prompt tokens of finished generations (cached ones included).', [
      ['', this.promptTokens],
    ])
    metric('runner_generated_tokens_total', 'counter', 'Tokens generated.', [['', this.generatedTokens]])
    metric('runner_cached_tokens_total', 'counter', 'Prompt tokens whose KV rows were reused from the prefix cache instead of evaluated.', [
      ['', this.cachedTokens],
    ])
    metric('runner_generation_seconds_total', 'counter', 'Seconds slots spent generating (prompt and decode).', [
      ['', this.generationSeconds],
    ])
    metric('runner_queue_depth', 'gauge', 'Requests waiting for a slot.', [['', g.queueDepth]])
    metric('runner_slots_busy', 'gauge', 'Slots serving a request.', [['', g.slotsBusy]])
    metric('runner_slots_total', 'gauge', 'Slots (--parallel).', [['', g.slotsTotal]])
    metric('runner_prefix_cache_hits_total', 'counter', 'Requests that reused at least one cached prompt token.', [['', this.prefixHits]])
    metric('runner_prefix_cache_misses_total', 'counter', 'Requests that reused no cached prompt token.', [['', this.prefixMisses]])
    metric('runner_prefix_cache_tokens', 'gauge', 'Tokens whose KV rows the slots hold for reuse.', [['', g.prefixCacheTokens]])
    metric('runner_prefix_cache_bytes', 'gauge', 'Bytes of KV cache holding those tokens.', [['', g.prefixCacheBytes]])
    if (g.batchedSteps !== undefined || this.retired.steps > 0) {
      metric('runner_batched_decode_steps_total', 'counter', 'Forward steps the slots decoded together.', [
        ['', (g.batchedSteps ?? 0) + this.retired.steps],
      ])
      metric('runner_batched_decode_tokens_total', 'counter', 'Tokens in those steps (divided by the steps: the mean batch).', [
        ['', (g.batchedTokens ?? 0) + this.retired.tokens],
      ])
    }
    if (this.speculation !== undefined) {
      const source: Array<[string, number]> = [[`{source="${escapeLabel(this.speculation)}"}`, 0]]
      const by = (v: number): Array<[string, number]> => [[source[0]![0], v]]
      metric('runner_draft_tokens_total', 'counter', 'Drafted tokens the model verified (speculative decoding).', by(this.draftTokens))
      metric(
        'runner_draft_accepted_tokens_total',
        'counter',
        'Drafted tokens the model sampled itself (divided by the drafted: the acceptance).',
        by(this.draftAccepted),
      )
      metric('runner_draft_steps_total', 'counter', 'Verify steps that carried drafted tokens.', by(this.draftSteps))
    }
    metric('runner_models_loaded', 'gauge', 'Models loaded now.', [['', g.modelsLoaded]])
    metric('runner_models_servable', 'gauge', 'Models this server can load (-m, --models-dir).', [['', g.modelsServable]])
    metric('runner_model_loads_total', 'counter', 'Model loads that finished.', [['', this.modelLoads]])
    metric('runner_model_load_failures_total', 'counter', 'Model loads that failed (the requests got the reason).', [
      ['', this.modelLoadFailures],
    ])
    metric(
      'runner_model_unloads_total',
      'counter',
      'Model unloads, by reason (keep_alive 0, expired, evicted for room, request, shutdown).',
      [...this.unloads.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([reason, n]) => [`{reason="${escapeLabel(reason)}"}`, n]),
    )
    metric('process_resident_memory_bytes', 'gauge', 'Resident set size of the server process in bytes.', [['', process.memoryUsage.rss()]])
    return `${out.join('\n')}\n`
  }
}

function escapeLabel(v: string): string {
  return v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return '+Inf'
  if (v === -Infinity) return '-Inf'
  return String(v)
}

/**
 * Slots and the queue. Each slot owns one Context (its own KV cache) wrapped in a Session; the
 * engine runs one call at a time per context, so a slot serves one request at a time. Requests
 * beyond the slots wait in a bounded FIFO queue; past its bound they are refused (503 with
 * Retry-After) instead of piling up.
 *
 * Prefix cache by slot affinity: a request goes to the free slot whose cache shares the longest
 * prefix with its prompt (least recently used among ties, and when nothing matches), so the cache
 * is bounded by the slots' own KV and "eviction" is the LRU slot's cache being overwritten.
 */
import type {Session} from '../engine/index.js'
import {ApiError} from './api-error.js'

export interface Slot {
  readonly id: number
  readonly session: Session
  busy: boolean
  /** Monotonic use counter (higher: more recent). */
  lastUsed: number
}

export interface Lease {
  readonly slot: Slot
  /** Give the slot back (idempotent). Call only once the slot's generation has settled. */
  release(): void
}

interface Waiter {
  readonly prompt: readonly number[]
  readonly resolve: (lease: Lease) => void
  readonly reject: (error: unknown) => void
  readonly signal: AbortSignal
  readonly onAbort: () => void
}

export interface SchedulerOptions {
  /** Most requests waiting for a slot. */
  readonly queueLimit: number
  /** Pick slots by shared prefix (true) or forget each slot's cache before reuse (false). */
  readonly prefixCache: boolean
}

export class Scheduler {
  readonly slots: Slot[]
  private readonly waiting: Waiter[] = []
  private clock = 0
  private closed = false
  /** Called when a slot is taken, with the tokens its cache will reuse (prefix-cache accounting). */
  onAssign: (slot: Slot, reused: number) => void = () => {}

  constructor(
    sessions: readonly Session[],
    readonly options: SchedulerOptions,
  ) {
    this.slots = sessions.map((session, id) => ({id, session, busy: false, lastUsed: 0}))
  }

  get busy(): number {
    return this.slots.filter((s) => s.busy).length
  }

  get queued(): number {
    return this.waiting.length
  }

  /**
   * A slot for this prompt: at once if one is free, else after the requests queued before it.
   * Rejects with a 503 when the queue is full or the server is closing, and with the signal's
   * reason when the request is aborted while it waits (it leaves the queue at once).
   */
  acquire(prompt: readonly number[], signal: AbortSignal): Promise<Lease> {
    if (this.closed) return Promise.reject(new ApiError(503, 'the server is shutting down', null, 'server_shutting_down'))
    if (signal.aborted) return Promise.reject(signal.reason)
    if (this.waiting.length === 0) {
      const slot = this.pick(prompt)
      if (slot) return Promise.resolve(this.lease(slot, prompt))
    }
    if (this.waiting.length >= this.options.queueLimit) {
      return Promise.reject(
        new ApiError(
          503,
          `the server is busy: ${this.slots.length} slots in use and ${this.waiting.length} requests queued (--queue); retry later`,
          null,
          'server_overloaded',
          {
            'retry-after': '1',
          },
        ),
      )
    }
    return new Promise<Lease>((resolve, reject) => {
      const waiter: Waiter = {
        prompt,
        resolve,
        reject,
        signal,
        onAbort: () => {
          const i = this.waiting.indexOf(waiter)
          if (i >= 0) this.waiting.splice(i, 1)
          reject(signal.reason)
        },
      }
      signal.addEventListener('abort', waiter.onAbort, {once: true})
      this.waiting.push(waiter)
    })
  }

  /** Refuse everything queued and anything new (shutdown). Active slots finish or are aborted by their owners. */
  close(): void {
    this.closed = true
    for (const w of this.waiting.splice(0)) {
      w.signal.removeEventListener('abort', w.onAbort)
      w.reject(new ApiError(503, 'the server is shutting down', null, 'server_shutting_down'))
    }
  }

  /** Tokens a free slot would reuse for this prompt. */
  reusable(slot: Slot, prompt: readonly number[]): number {
    if (!this.options.prefixCache) return 0
    return slot.session.reusable(prompt)
  }

  /**
   * The free slot with the longest reusable prefix, when that prefix is worth what it costs: at
   * least half of the prompt, or at least half of what the slot holds (a BOS token or a template
   * header in common must not make a request overwrite another conversation's cache while an
   * idle slot waits). Otherwise the least recently used free slot.
   */
  private pick(prompt: readonly number[]): Slot | undefined {
    let best: Slot | undefined
    let bestReuse = -1
    let lru: Slot | undefined
    for (const slot of this.slots) {
      if (slot.busy) continue
      if (!lru || slot.lastUsed < lru.lastUsed) lru = slot
      const reuse = this.reusable(slot, prompt)
      if (reuse > bestReuse || (reuse === bestReuse && best !== undefined && slot.lastUsed < best.lastUsed)) {
        best = slot
        bestReuse = reuse
      }
    }
    if (best && bestReuse > 0 && (2 * bestReuse >= prompt.length || 2 * bestReuse >= best.session.cached.length)) return best
    return lru
  }

  private lease(slot: Slot, prompt: readonly number[]): Lease {
    slot.busy = true
    slot.lastUsed = ++this.clock
    const reused = this.reusable(slot, prompt)
    if (!this.options.prefixCache && slot.session.cached.length > 0) slot.session.reset()
    this.onAssign(slot, reused)
    let released = false
    return {
      slot,
      release: () => {
        if (released) return
        released = true
        slot.busy = false
        this.dispatch()
      },
    }
  }

  /** Hand free slots to waiting requests, first come first served. */
  private dispatch(): void {
    while (this.waiting.length > 0) {
      const w = this.waiting[0]!
      const slot = this.pick(w.prompt)
      if (!slot) return
      this.waiting.shift()
      w.signal.removeEventListener('abort', w.onAbort)
      w.resolve(this.lease(slot, w.prompt))
    }
  }
}

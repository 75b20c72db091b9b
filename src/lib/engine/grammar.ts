/**
 * Constrained decoding's native side behind typed wrappers: a grammar program (validated by the
 * engine), a vocabulary's token trie (built once per tokenizer, on first use), and matchers — one
 * document's parse state, which the engine's generate loop masks and advances on its own thread.
 * The program comes from src/lib/grammar (lowerGrammar); this file only carries it across.
 */
import type {Tokenizer} from '../tokenizer/index.js'
import {loadAddon, type NativeGrammarHandle, type NativeMatcherHandle, type NativeTrieHandle} from './addon.js'
import {engineError} from './errors.js'

function call<T>(fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw engineError(error)
  }
}

/** A grammar program the engine has checked. */
export class NativeGrammar {
  private constructor(readonly handle: NativeGrammarHandle) {}

  static create(program: Int32Array): NativeGrammar {
    return new NativeGrammar(call(() => loadAddon().grammarCreate(program)))
  }
}

const tries = new WeakMap<Tokenizer, NativeTrieHandle>()

/**
 * The bytes each token adds to the text, as the detokenizer writes them; control, unknown and
 * end-of-generation tokens have none (a grammar never allows them; the engine allows the
 * end-of-generation ones exactly when the document is complete).
 */
export function tokenBytes(tokenizer: Tokenizer): {bytes: Uint8Array; offsets: Float64Array} {
  const n = tokenizer.vocabSize
  const pieces: Uint8Array[] = []
  const offsets = new Float64Array(n + 1)
  let total = 0
  for (let id = 0; id < n; id++) {
    const piece = tokenizer.isEog(id) ? new Uint8Array(0) : tokenizer.pieceBytes(id, {special: false})
    pieces.push(piece)
    total += piece.length
    offsets[id + 1] = total
  }
  const bytes = new Uint8Array(total)
  pieces.forEach((p, id) => bytes.set(p, offsets[id]!))
  return {bytes, offsets}
}

function trieFor(tokenizer: Tokenizer): NativeTrieHandle {
  let trie = tries.get(tokenizer)
  if (!trie) {
    const {bytes, offsets} = tokenBytes(tokenizer)
    trie = call(() => loadAddon().tokenTrieCreate(bytes, offsets))
    tries.set(tokenizer, trie)
  }
  return trie
}

export interface MaskResult {
  /** Bit i of word i >> 5: token i may come next. */
  readonly bits: Uint32Array
  /** How many tokens are allowed (end of text aside: see complete). */
  readonly allowed: number
  /** The one allowed token, or -1. */
  readonly only: number
}

/** One document's parse state over a grammar (and a vocabulary, for masks and tokens). */
export class GrammarMatcher {
  private constructor(
    readonly handle: NativeMatcherHandle,
    readonly grammar: NativeGrammar,
    private readonly nVocab: number,
  ) {}

  /** A matcher at the start of a document; without a tokenizer it takes bytes only. */
  static create(grammar: NativeGrammar, tokenizer?: Tokenizer): GrammarMatcher {
    const trie = tokenizer ? trieFor(tokenizer) : null
    return new GrammarMatcher(
      call(() => loadAddon().matcherCreate(grammar.handle, trie)),
      grammar,
      tokenizer?.vocabSize ?? 0,
    )
  }

  /** The text so far is a whole document. */
  get complete(): boolean {
    return call(() => loadAddon().matcherIsComplete(this.handle))
  }

  fillMask(bits: Uint32Array = new Uint32Array(Math.ceil(this.nVocab / 32))): MaskResult {
    const r = call(() => loadAddon().matcherFillMask(this.handle, bits))
    return {bits, allowed: r.allowed, only: r.only}
  }

  /** Advance by a token; refused (ENGINE_INVALID_ARGUMENT, state unchanged) if the grammar does not allow it. */
  acceptToken(token: number): void {
    call(() => loadAddon().matcherAcceptToken(this.handle, token))
  }

  /** Advance by bytes; returns the index of the first byte no document allows (state unchanged), or -1. */
  acceptBytes(bytes: Uint8Array): number {
    return call(() => loadAddon().matcherAcceptBytes(this.handle, bytes))
  }

  reset(): void {
    call(() => loadAddon().matcherReset(this.handle))
  }

  dispose(): void {
    loadAddon().matcherFree(this.handle)
  }
}

/** Is token `id` set in a mask? */
export function maskAllows(bits: Uint32Array, id: number): boolean {
  return ((bits[id >>> 5]! >>> (id & 31)) & 1) === 1
}

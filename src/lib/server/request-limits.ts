/**
 * Limits on what one request may hold, checked right after the body's schema and before any
 * rendering or tokenizing: a 4 MiB body of 130,000 tiny messages is refused in microseconds instead
 * of being tokenized whole before the context check. Each route names the fields it limits (a
 * table); refusals use OpenAI's wording and codes (array_above_max_length, string_above_max_length)
 * and name the flag that raises the limit.
 */
import type {Tokenizer} from '../tokenizer/index.js'
import {ApiError} from './api-error.js'

export interface RequestLimits {
  /** Messages (or Responses input items) in one request. */
  readonly messages: number
  /** Content parts (blocks) of one message, or of Anthropic's system. */
  readonly contentParts: number
  /** Tools a request may declare (OpenAI's own limit is 128). */
  readonly tools: number
  /** Characters of one stop string. */
  readonly stopChars: number
  /** Entries of logit_bias. */
  readonly logitBias: number
}

export const REQUEST_LIMIT_DEFAULTS: RequestLimits = {
  messages: 2048,
  contentParts: 256,
  tools: 128,
  stopChars: 1024,
  logitBias: 1024,
}

/** The serve flag of each limit, and what it bounds (its help). */
export const REQUEST_LIMIT_FLAGS = {
  messages: {flag: '--max-messages', help: 'messages (or Responses input items) one request may hold'},
  contentParts: {flag: '--max-content-parts', help: "content parts of one message (or of Anthropic's system)"},
  tools: {flag: '--max-tools', help: 'tools one request may declare'},
  stopChars: {flag: '--max-stop-length', help: 'characters of one stop string'},
  logitBias: {flag: '--max-logit-bias', help: 'logit_bias entries of one request'},
} as const satisfies Record<keyof RequestLimits, {flag: `--${string}`; help: string}>

export type RequestLimitFlag = (typeof REQUEST_LIMIT_FLAGS)[keyof RequestLimits]['flag'] extends `--${infer F}` ? F : never

/**
 * One limited field: `path` with `*` for every element of an array ("messages.*.content");
 * `items` bounds an array's length, `chars` a string's (or each string of an array), `keys` an
 * object's entries. A field of another type is left to the route's own checks.
 */
export interface LimitedField {
  readonly path: string
  readonly limit: keyof RequestLimits
  readonly kind: 'items' | 'chars' | 'keys'
}

const openAiCommon: readonly LimitedField[] = [
  {path: 'stop', limit: 'stopChars', kind: 'chars'},
  {path: 'logit_bias', limit: 'logitBias', kind: 'keys'},
]
const history = (list: string): LimitedField[] => [
  {path: list, limit: 'messages', kind: 'items'},
  {path: `${list}.*.content`, limit: 'contentParts', kind: 'items'},
]
const tools: LimitedField = {path: 'tools', limit: 'tools', kind: 'items'}

/** The limited fields of each route family. */
export const LIMITED_FIELDS = {
  openAiChat: [...history('messages'), tools, ...openAiCommon],
  openAiCompletion: openAiCommon,
  applyTemplate: [...history('messages'), tools],
  anthropic: [
    ...history('messages'),
    {path: 'system', limit: 'contentParts', kind: 'items'},
    tools,
    {path: 'stop_sequences', limit: 'stopChars', kind: 'chars'},
  ],
  responses: [...history('input'), tools],
  ollamaChat: [...history('messages'), tools, {path: 'options.stop', limit: 'stopChars', kind: 'chars'}],
  ollamaGenerate: [{path: 'options.stop', limit: 'stopChars', kind: 'chars'}],
} as const satisfies Record<string, readonly LimitedField[]>

/** How a route writes a path in refusals: OpenAI's `messages[3].content`, Anthropic's `messages.3.content`. */
export type ParamStyle = 'openai' | 'anthropic'

export function checkRequestLimits(
  body: Record<string, unknown>,
  fields: readonly LimitedField[],
  limits: RequestLimits,
  style: ParamStyle = 'openai',
): void {
  for (const field of fields) {
    for (const [value, at] of valuesAt(body, field.path.split('.'), [])) check(value, field, limits[field.limit], at, style)
  }
}

function check(value: unknown, field: LimitedField, limit: number, path: readonly (string | number)[], style: ParamStyle): void {
  const at = param(path, style)
  const flag = REQUEST_LIMIT_FLAGS[field.limit].flag
  if (field.kind === 'items' && Array.isArray(value) && value.length > limit) {
    throw new ApiError(
      400,
      `Invalid '${at}': array too long. Expected an array with maximum length ${limit}, but got an array with length ${value.length} instead (the server's ${flag})`,
      at,
      'array_above_max_length',
    )
  }
  if (field.kind === 'keys' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const n = Object.keys(value).length
    if (n > limit)
      throw new ApiError(
        400,
        `Invalid '${at}': too many entries. Expected at most ${limit}, but got ${n} instead (the server's ${flag})`,
        at,
        'object_above_max_size',
      )
  }
  if (field.kind === 'chars') {
    const strings =
      typeof value === 'string'
        ? [[value, at] as const]
        : Array.isArray(value)
          ? value.map((v, i) => [v, param([...path, i], style)] as const)
          : []
    for (const [s, where] of strings) {
      if (typeof s === 'string' && s.length > limit)
        throw new ApiError(
          400,
          `Invalid '${where}': string too long. Expected a string with maximum length ${limit}, but got a string with length ${s.length} instead (the server's ${flag})`,
          where,
          'string_above_max_length',
        )
    }
  }
}

/** Every value at `path`, with the concrete path it sits at. */
function valuesAt(value: unknown, path: readonly string[], at: readonly (string | number)[]): Array<[unknown, (string | number)[]]> {
  if (path.length === 0) return [[value, [...at]]]
  const [head, ...rest] = path
  if (head === '*') {
    if (!Array.isArray(value)) return []
    return value.flatMap((v, i) => valuesAt(v, rest, [...at, i]))
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, head!)) return []
  return valuesAt((value as Record<string, unknown>)[head!], rest, [...at, head!])
}

function param(at: readonly (string | number)[], style: ParamStyle): string {
  return at.reduce<string>((out, seg) => {
    if (out === '') return String(seg)
    return typeof seg === 'number' && style === 'openai' ? `${out}[${seg}]` : `${out}.${seg}`
  }, '')
}

const longestPiece = new WeakMap<Tokenizer, number>()

/**
 * The most bytes one token stands for (special tokens' text included). A text of more characters
 * than `nCtx` times this needs more than `nCtx` tokens whatever the tokenizer does: it cannot fit,
 * and is refused before it is tokenized.
 */
export function longestPieceBytes(tokenizer: Tokenizer): number {
  let n = longestPiece.get(tokenizer)
  if (n === undefined) {
    // At least 2: without byte fallback, one unknown character (two UTF-16 units at most) is one token.
    n = 2
    for (let id = 0; id < tokenizer.vocabSize; id++) n = Math.max(n, tokenizer.pieceBytes(id, {special: true}).length)
    longestPiece.set(tokenizer, n)
  }
  return n
}

/** Characters a template may add around the text that a token could cover (SentencePiece's leading space). */
const PIECE_SLACK = 16

/** Refuse, as context_length_exceeded, text that cannot fit `nCtx` tokens (see longestPieceBytes). */
export function refuseUnfittable(tokenizer: Tokenizer, nCtx: number, chars: number, at: string): void {
  const most = nCtx * longestPieceBytes(tokenizer) + PIECE_SLACK
  if (chars > most)
    throw new ApiError(
      400,
      `${at} holds ${chars} characters of text: more than the ${nCtx} tokens of a slot's context (--ctx) can hold, since no token of this model covers more than ${longestPieceBytes(tokenizer)} bytes`,
      at,
      'context_length_exceeded',
    )
}

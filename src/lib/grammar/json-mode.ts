/**
 * JSON mode: the grammar of any JSON document (RFC 8259), or of any JSON object, which is what
 * OpenAI's `response_format: {type: "json_object"}` asks for. Exactly RFC 8259's syntax:
 *
 * - strings: raw characters U+0020 and above except `"` and `\`; escapes `\" \\ \/ \b \f \n \r \t`
 *   and `\u` with exactly four hex digits (any four, lone surrogates included, as RFC 8259's grammar
 *   and JSON.parse allow);
 * - numbers: `-`? then `0` or a non-zero digit and digits (no leading zeros), an optional fraction
 *   with at least one digit, an optional exponent `e`/`E` `+`/`-`? digits; no `+1`, `.5`, `1.`;
 * - `true`, `false`, `null`, arrays and objects, nested to any depth (grammar recursion: each level
 *   starts with `[` or `{`, so there is no left recursion).
 *
 * Whitespace between tokens is `[ \t\n\r]`, at most MAX_JSON_WHITESPACE characters in a row
 * ('flexible'), or none at all ('compact'). The bound matters because whitespace never finishes a
 * document: without one, a model that prefers newlines can emit them forever while every step stays
 * "valid", and the output never ends; 20 is enough for pretty-printing nested a few levels deep with
 * any indent the model likes. A document may not start with whitespace (the first character is the
 * value's, so the model cannot stall before it begins); it may end with the same bounded whitespace as
 * between tokens (none when compact), so a trailing newline before end-of-text is allowed and a
 * top-level number can be ended by one.
 */
import {charSet, complement, union, charsOf} from './charset.js'
import {alt, chars, EMPTY, lit, oneOf, opt, plus, ref, repeat, seq, star, type Expr, type Grammar} from './ir.js'

/** The most whitespace characters in a row between two tokens in 'flexible' mode. */
export const MAX_JSON_WHITESPACE = 20

export interface JsonModeOptions {
  /** 'flexible' (default): up to MAX_JSON_WHITESPACE of `[ \t\n\r]` between tokens; 'compact': none. */
  readonly whitespace?: 'flexible' | 'compact'
}

const DIGIT = chars(charSet([[0x30, 0x39]]))
const HEX = chars(
  charSet([
    [0x30, 0x39],
    [0x41, 0x46],
    [0x61, 0x66],
  ]),
)
/** Raw string characters: U+0020 and above, except `"` and `\` (and never a control character). */
const STRING_CHAR = chars(complement(union(charSet([[0, 0x1f]]), charsOf('"\\'))))

/** The rules shared by both kinds; `ws` is the whitespace allowed between tokens. */
function jsonRules(ws: Expr): [string, Expr][] {
  const list = (open: string, item: Expr, close: string): Expr =>
    seq(lit(open), ws, opt(seq(item, star(seq(ws, lit(','), ws, item)), ws)), lit(close))
  return [
    ['value', alt(ref('object'), ref('array'), ref('string'), ref('number'), lit('true'), lit('false'), lit('null'))],
    ['object', list('{', seq(ref('string'), ws, lit(':'), ws, ref('value')), '}')],
    ['array', list('[', ref('value'), ']')],
    ['string', seq(lit('"'), star(alt(STRING_CHAR, seq(lit('\\'), alt(oneOf('"\\/bfnrt'), seq(lit('u'), repeat(HEX, 4, 4)))))), lit('"'))],
    [
      'number',
      seq(
        opt(lit('-')),
        alt(lit('0'), seq(chars(charSet([[0x31, 0x39]])), star(DIGIT))),
        opt(seq(lit('.'), plus(DIGIT))),
        opt(seq(oneOf('eE'), opt(oneOf('+-')), plus(DIGIT))),
      ),
    ],
  ]
}

/**
 * The grammar of a JSON document: any value (`kind: 'value'`) or an object (`'object'`). Its start
 * rule is `root`; the other rules are `value`, `object`, `array`, `string`, `number` (and `ws`).
 */
export function jsonModeGrammar(kind: 'value' | 'object', options: JsonModeOptions = {}): Grammar {
  const compact = options.whitespace === 'compact'
  const ws = compact ? EMPTY : ref('ws')
  const rules = new Map<string, Expr>(jsonRules(ws))
  if (!compact) rules.set('ws', repeat(oneOf(' \t\n\r'), 0, MAX_JSON_WHITESPACE))
  rules.set('root', seq(ref(kind), ws))
  return {rules, start: 'root'}
}

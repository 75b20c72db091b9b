/**
 * The syntax of GBNF, llama.cpp's grammar language (its grammars/README.md), read the way its
 * recursive-descent parser (src/llama-grammar.cpp) reads it, so that a grammar written for
 * llama.cpp's `--grammar` means the same here and is refused where it is refused there:
 *
 * - whitespace is spaces, tabs and `#` comments; newlines end a rule except inside parentheses and
 *   right after `|`;
 * - rule names are `[a-zA-Z0-9-]+`; the same name is a reference anywhere in a sequence;
 * - literals `"..."` and classes `[...]`/`[^...]` take the escapes `\n \t \r \\ \" \[ \] \- \xHH
 *   \uHHHH \UHHHHHHHH` (exactly that many hex digits); `-` before `]` is a plain character;
 * - `.` is any character; `*` `+` `?` `{m}` `{m,}` `{m,n}` repeat the item before them, and may be
 *   stacked (`x?*`), as llama.cpp allows.
 *
 * Syntax only: references are resolved, and left recursion found, by ./checks.ts. Groups stay
 * expressions (no synthesized rules) since the IR nests; repetition stays one operator with a counter.
 */
import {ANY_CHAR, charSet, complement, MAX_CODE_POINT, type CodePointRange} from '../charset.js'
import {alt, chars, EMPTY, lit, repeat, seq, type Expr} from '../ir.js'
import {GrammarSyntaxError, positionOf} from './errors.js'

/**
 * llama.cpp's limit on repetition (its MAX_REPETITION_THRESHOLD): a minimum count above it, or nested
 * counted repetitions whose expansion would create more rules than it, are refused there. We do not
 * expand repetitions, but refuse the same grammars so that a grammar accepted here is accepted there
 * and so that nested counters stay within sizes a matcher state can carry.
 */
export const MAX_REPETITION = 2000

export interface ParsedRule {
  readonly name: string
  readonly expr: Expr
  /** UTF-16 offset of the rule's name in the source. */
  readonly at: number
}

export interface ParsedGbnf {
  /** In source order; a name may appear twice (./checks.ts refuses that). */
  readonly rules: readonly ParsedRule[]
  /** Every rule reference with its offset, in source order. */
  readonly refs: readonly {readonly name: string; readonly at: number}[]
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9'
const isWordChar = (c: string | undefined): boolean =>
  c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '-' || isDigit(c))

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  t: 0x09,
  r: 0x0d,
  n: 0x0a,
  '\\': 0x5c,
  '"': 0x22,
  '[': 0x5b,
  ']': 0x5d,
  '-': 0x2d,
}
const HEX_ESCAPES: Readonly<Record<string, number>> = {x: 2, u: 4, U: 8}

/** One item of a sequence while it is being read: its expression and llama.cpp's rule-count weight. */
interface Item {
  expr: Expr
  /** How many rules llama.cpp's expansion of this item makes (its `n_prev_rules`), for MAX_REPETITION. */
  weight: number
}

class Parser {
  private pos = 0
  /** llama.cpp's symbol count: groups and repetition expansions each add to it. */
  private symbols = 0
  readonly rules: ParsedRule[] = []
  readonly refs: {name: string; at: number}[] = []

  constructor(private readonly src: string) {}

  fail(detail: string, at = this.pos): never {
    const {line, column} = positionOf(this.src, at)
    throw new GrammarSyntaxError(detail, line, column)
  }

  /** The upcoming text for an error message, like llama.cpp's "expecting X at <rest>". */
  private found(): string {
    if (this.pos >= this.src.length) return 'end of input'
    const rest = this.src.slice(this.pos).split(/\r?\n|\r/)[0]!
    return rest.length === 0 ? 'end of line' : `'${rest.length > 20 ? `${rest.slice(0, 20)}…` : rest}'`
  }

  private expected(what: string): never {
    this.fail(`expecting ${what}, found ${this.found()}`)
  }

  private peek(): string | undefined {
    return this.src[this.pos]
  }

  private skipSpace(newlineOk: boolean): void {
    for (;;) {
      const c = this.peek()
      if (c === ' ' || c === '\t' || (newlineOk && (c === '\r' || c === '\n'))) this.pos++
      else if (c === '#') while (this.pos < this.src.length && this.peek() !== '\r' && this.peek() !== '\n') this.pos++
      else return
    }
  }

  private name(): string {
    const start = this.pos
    while (isWordChar(this.peek())) this.pos++
    if (this.pos === start) this.expected('a rule name')
    return this.src.slice(start, this.pos)
  }

  private int(): number {
    const start = this.pos
    while (isDigit(this.peek())) this.pos++
    if (this.pos === start) this.expected('an integer')
    return Number(this.src.slice(start, this.pos))
  }

  /** One character of a literal or class, escapes decoded; `inRange` allows a surrogate endpoint. */
  private char(inRange = false): number {
    const at = this.pos
    if (this.pos >= this.src.length) this.fail('unexpected end of input')
    let cp: number
    if (this.peek() === '\\') {
      const e = this.src[this.pos + 1]
      if (e !== undefined && e in SIMPLE_ESCAPES) {
        this.pos += 2
        return SIMPLE_ESCAPES[e]!
      }
      const size = e === undefined ? undefined : HEX_ESCAPES[e]
      if (size === undefined) this.fail(`unknown escape '\\${e ?? ''}'`)
      const hex = this.src.slice(this.pos + 2, this.pos + 2 + size)
      if (!new RegExp(`^[0-9a-fA-F]{${size}}$`).test(hex)) this.fail(`expecting ${size} hex chars after '\\${e}'`)
      this.pos += 2 + size
      cp = parseInt(hex, 16)
      if (cp > MAX_CODE_POINT) this.fail(`'\\${e}${hex}' is beyond U+10FFFF`, at)
    } else {
      cp = this.src.codePointAt(this.pos)!
      this.pos += cp > 0xffff ? 2 : 1
    }
    if (!inRange && cp >= 0xd800 && cp <= 0xdfff) {
      this.fail(`U+${cp.toString(16).toUpperCase()} is a surrogate, not a character (UTF-8 cannot encode it)`, at)
    }
    return cp
  }

  private literal(): Expr {
    this.pos++ // "
    let text = ''
    while (this.peek() !== '"') {
      if (this.pos >= this.src.length) this.fail('unexpected end of input: unterminated string literal')
      text += String.fromCodePoint(this.char())
    }
    this.pos++
    return lit(text)
  }

  private charClass(): Expr {
    const start = this.pos
    this.pos++ // [
    const negated = this.peek() === '^'
    if (negated) this.pos++
    const ranges: CodePointRange[] = []
    while (this.peek() !== ']') {
      if (this.pos >= this.src.length) this.fail('unexpected end of input: unterminated character class')
      const rangeStart = this.pos
      const lo = this.char(this.src[this.pos + 1] === '-')
      if (this.peek() === '-' && this.src[this.pos + 1] !== ']') {
        this.pos++
        if (this.pos >= this.src.length) this.fail('unexpected end of input')
        const hi = this.char(true)
        if (hi < lo) this.fail(`character range out of order`, rangeStart)
        ranges.push([lo, hi])
      } else ranges.push([lo, lo])
    }
    // llama.cpp reads `[]` and `[^]` as nothing at all (they vanish from the sequence); neither an
    // empty set nor "any character" is what a writer means, so they are refused.
    if (ranges.length === 0) this.fail(`empty character class '${this.src.slice(start, this.pos + 1)}'`, start)
    this.pos++
    const set = charSet(ranges)
    return chars(negated ? complement(set) : set)
  }

  /** `{m}`, `{m,}`, `{m,n}` after the `{`; returns [min, max]. */
  private braces(nested: boolean): [number, number | undefined] {
    this.skipSpace(nested)
    if (!isDigit(this.peek())) this.expected('an int')
    const min = this.int()
    this.skipSpace(nested)
    let max: number | undefined = min
    if (this.peek() === '}') {
      this.pos++
    } else if (this.peek() === ',') {
      this.pos++
      this.skipSpace(nested)
      max = isDigit(this.peek()) ? this.int() : undefined
      this.skipSpace(nested)
      if (this.peek() !== '}') this.expected("'}'")
      this.pos++
    } else this.expected("','")
    this.skipSpace(nested)
    return [min, max]
  }

  private repetition(last: Item | undefined, min: number, max: number | undefined, at: number): void {
    if (!last) this.fail('expecting preceding item to */+/?/{', at)
    if (min > MAX_REPETITION) this.fail(`number of repetitions ${min} exceeds the limit of ${MAX_REPETITION}`, at)
    if (max !== undefined && max < min) this.fail(`repetition {${min},${max}}: the maximum is below the minimum`, at)
    // llama.cpp's expansion size: it treats a maximum above the limit as no maximum.
    const llamaMax = max !== undefined && max > MAX_REPETITION ? undefined : max
    const total = llamaMax !== undefined && llamaMax > 0 ? llamaMax : Math.max(min, 1)
    if (last.weight * total > MAX_REPETITION) {
      this.fail(`nested repetition expands to ${last.weight * total} rules, over the limit of ${MAX_REPETITION}`, at)
    }
    this.symbols += llamaMax === undefined ? 1 : llamaMax - min
    last.expr = repeat(last.expr, min, max)
    last.weight *= total
  }

  private sequence(nested: boolean): Expr {
    const items: Item[] = []
    /** What a following `*`/`+`/`?`/`{` repeats: the last item, or nothing right after `""`. */
    let operand: Item | undefined
    const push = (expr: Expr, weight = 1): void => {
      operand = {expr, weight}
      items.push(operand)
    }
    for (;;) {
      const c = this.peek()
      const at = this.pos
      if (c === '"') {
        const e = this.literal()
        // An empty literal adds nothing in llama.cpp, so a repetition right after it has no operand.
        if (e.kind === 'literal' && e.text === '') operand = undefined
        else push(e)
      } else if (c === '[') push(this.charClass())
      else if (c === '<' || c === '!') {
        this.fail("token matches ('<[id]>', '!<[id]>', '<token>') are not supported: this engine constrains text, not token ids")
      } else if (isWordChar(c)) {
        const name = this.name()
        this.refs.push({name, at})
        push({kind: 'ref', name})
      } else if (c === '(') {
        this.pos++
        this.skipSpace(true)
        const before = this.symbols++
        const e = this.alternates(true)
        if (this.peek() !== ')') this.expected("')'")
        this.pos++
        push(e, Math.max(1, this.symbols - before))
      } else if (c === '.') {
        this.pos++
        push(chars(ANY_CHAR))
      } else if (c === '*' || c === '+' || c === '?') {
        this.pos++
        this.skipSpace(nested)
        this.repetition(operand, c === '+' ? 1 : 0, c === '?' ? 1 : undefined, at)
        continue
      } else if (c === '{') {
        this.pos++
        const [min, max] = this.braces(nested)
        this.repetition(operand, min, max, at)
        continue
      } else break
      this.skipSpace(nested)
    }
    return items.length === 0 ? EMPTY : seq(...items.map((i) => i.expr))
  }

  private alternates(nested: boolean): Expr {
    const options = [this.sequence(nested)]
    while (this.peek() === '|') {
      this.pos++
      this.skipSpace(true)
      options.push(this.sequence(nested))
    }
    return alt(...options)
  }

  private rule(): void {
    const at = this.pos
    const name = this.name()
    this.skipSpace(false)
    if (!this.src.startsWith('::=', this.pos)) this.expected('::=')
    this.pos += 3
    this.skipSpace(true)
    const expr = this.alternates(false)
    this.rules.push({name, expr, at})
    if (this.peek() === '\r') this.pos += this.src[this.pos + 1] === '\n' ? 2 : 1
    else if (this.peek() === '\n') this.pos++
    else if (this.pos < this.src.length) this.expected('newline or end')
    this.skipSpace(true)
  }

  parse(): ParsedGbnf {
    this.skipSpace(true)
    while (this.pos < this.src.length) this.rule()
    return {rules: this.rules, refs: this.refs}
  }
}

/** Read GBNF source into rules; throws GrammarSyntaxError at the first syntax error. */
export function parseGbnfSyntax(text: string): ParsedGbnf {
  return new Parser(text).parse()
}

/** For ./checks.ts: the error at a source offset. */
export function errorAt(text: string, at: number, detail: string): GrammarSyntaxError {
  const {line, column} = positionOf(text, at)
  return new GrammarSyntaxError(detail, line, column)
}

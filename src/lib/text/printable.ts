/**
 * Text from a model file (a tensor name, a metadata key, general.name, a token) made safe to print.
 *
 * A GGUF file is attacker-controlled: its strings are valid UTF-8 but may hold terminal escapes
 * (ESC [2J clears the screen, OSC 0 sets the window title), BEL, NUL, the single-code-point CSI
 * U+009B, bidi overrides that make text read backwards, or invisible characters that make two
 * names look alike. Every character that is a control (Cc: C0, DEL, C1), a format character (Cf:
 * bidi embeddings, overrides and isolates, zero-width spaces and joiners, the BOM, tag
 * characters), a line or paragraph separator (Zl, Zp: U+2028, U+2029), or a lone surrogate (Cs) is
 * written as an escape: `\xNN` below U+0100, `\u{NNNN}` above, so the text stays readable and
 * the escape names the character. The classes are the JavaScript engine's own Unicode tables, so a
 * new format character of a later Unicode version is escaped without a change here.
 *
 * Backslashes are left as they are, so `printable` is idempotent: a message that embeds an already
 * printable name can be passed through it again (RunnerError does, as the last line of defence).
 * `quoted` escapes `"` and `\` as well, for a string shown as a literal.
 */

/** One character that must not reach a terminal as itself. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u
/**
 * What JSON.stringify leaves raw (it escapes C0 inside strings, and lone surrogates, itself): DEL,
 * C1, format characters, separators. Line feeds are its own indentation, outside every string.
 */
const JSON_UNSAFE = /(?![\n])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu

/** How much of a file's string an error message or a table cell shows. */
export const PRINTABLE_MAX = 200

export interface PrintableOptions {
  /** Characters of output at most (escapes count as what they print); the rest is cut and counted. Default 200. */
  readonly max?: number
  /** Keep line feeds and tabs as they are (a multi-line value printed alone, such as a chat template). */
  readonly newlines?: boolean
}

function hex(n: number, width: number): string {
  return n.toString(16).toUpperCase().padStart(width, '0')
}

/** The escape of one unsafe code point: `\x1B`, `\u{202E}`. */
function escapeCodePoint(cp: number): string {
  return cp < 0x100 ? `\\x${hex(cp, 2)}` : `\\u{${hex(cp, 4)}}`
}

/** Code points of text from index `from` (what a cut leaves out, counted as a reader counts characters). */
function codePointsFrom(text: string, from: number): number {
  let n = 0
  for (let i = from; i < text.length; i++) {
    const u = text.charCodeAt(i)
    // A low surrogate after a high one is the second half of one character.
    if (u >= 0xdc00 && u <= 0xdfff && i > from && isHigh(text.charCodeAt(i - 1))) continue
    n++
  }
  return n
}

function isHigh(u: number): boolean {
  return u >= 0xd800 && u <= 0xdbff
}

function render(text: string, max: number, piece: (ch: string, cp: number) => string): string {
  let out = ''
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!
    const ch = String.fromCodePoint(cp)
    const shown = piece(ch, cp)
    if (out.length + shown.length > max) return `${out}… (${codePointsFrom(text, i)} more characters)`
    out += shown
    i += ch.length
  }
  return out
}

/** `text` with every control, format and separator character escaped, and at most `max` characters long. */
export function printable(text: string, options: PrintableOptions = {}): string {
  const max = Math.max(0, options.max ?? PRINTABLE_MAX)
  const keep = options.newlines === true
  if (text.length <= max && !UNSAFE.test(text)) return text
  return render(text, max, (ch, cp) => ((keep && (ch === '\n' || ch === '\t')) || !UNSAFE.test(ch) ? ch : escapeCodePoint(cp)))
}

/** `text` as a double-quoted literal (`"` and `\` escaped too), printable and at most `max` characters inside the quotes. */
export function quoted(text: string, max = PRINTABLE_MAX): string {
  const inner = render(text, Math.max(0, max), (ch, cp) =>
    ch === '"' || ch === '\\' ? `\\${ch}` : UNSAFE.test(ch) ? escapeCodePoint(cp) : ch,
  )
  return `"${inner}"`
}

/**
 * JSON text (JSON.stringify's) in which every character `printable` escapes is a JSON `\uXXXX`
 * escape: the document parses back to exactly the same values, and its bytes carry no control,
 * format or separator character to the terminal. JSON.stringify itself escapes only C0.
 */
export function printableJson(value: unknown, replacer?: (this: unknown, key: string, value: unknown) => unknown, space?: number): string {
  const text = JSON.stringify(value, replacer, space) ?? 'null'
  return text.replace(JSON_UNSAFE, (ch) =>
    Array.from({length: ch.length}, (_, i) => `\\u${hex(ch.charCodeAt(i), 4).toLowerCase()}`).join(''),
  )
}

export interface PreviewOptions {
  /** Characters of output at most. Default 120. */
  readonly max?: number
  /** Levels of nesting shown; deeper containers are `[…]` / `{…}`. Default 3. */
  readonly depth?: number
  /** Items (or properties) shown per container. Default 8. */
  readonly items?: number
}

/**
 * A short, printable rendering of any value, for an error message that shows what was refused.
 * Never throws: cycles are `[circular]`, containers past `depth` are `[…]` / `{…}`, long strings and
 * wide containers are cut, BigInts are `12n`, a getter or proxy trap that throws is `[unreadable]`.
 */
export function preview(value: unknown, options: PreviewOptions = {}): string {
  const max = Math.max(1, options.max ?? 120)
  try {
    const p = new Previewer(max, options.depth ?? 3, options.items ?? 8)
    return printable(p.show(value, 0), {max})
  } catch {
    return '[unprintable value]'
  }
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

class Previewer {
  /** Characters written so far (approximate: containers stop adding items once it passes max). */
  private used = 0
  private readonly path = new Set<object>()

  constructor(
    private readonly max: number,
    private readonly depth: number,
    private readonly items: number,
  ) {}

  show(value: unknown, level: number): string {
    const s = this.leaf(value, level)
    // Containers are counted through their items.
    if (typeof value !== 'object' || value === null) this.used += s.length
    return s
  }

  private leaf(value: unknown, level: number): string {
    switch (typeof value) {
      case 'string':
        return quoted(value, Math.max(8, this.max - this.used))
      case 'number':
        return Object.is(value, -0) ? '-0' : String(value)
      case 'bigint':
        return `${value}n`
      case 'boolean':
      case 'undefined':
        return String(value)
      case 'symbol':
        return printable(value.toString(), {max: this.max})
      case 'function':
        return `[function ${
          printable(
            safe(() => String(value.name), ''),
            {max: 40},
          ) || '(anonymous)'
        }]`
    }
    if (value === null) return 'null'
    const obj = value as object
    if (this.path.has(obj)) return '[circular]'
    this.path.add(obj)
    try {
      return this.object(obj, level)
    } finally {
      this.path.delete(obj)
    }
  }

  private object(obj: object, level: number): string {
    if (obj instanceof Date) return safe(() => obj.toISOString(), 'Invalid Date')
    if (obj instanceof RegExp) return printable(String(obj), {max: this.max})
    if (obj instanceof Error)
      return `${printable(safe(() => String(obj.name), 'Error'))}: ${quoted(
        safe(() => String(obj.message), ''),
        60,
      )}`
    const deep = level >= this.depth
    if (Array.isArray(obj)) return deep ? '[…]' : this.list('[', ']', obj.length, (i) => this.child(() => obj[i] as unknown, level))
    if (ArrayBuffer.isView(obj) && !(obj instanceof DataView)) {
      const arr = obj as unknown as ArrayLike<unknown>
      const name = `${safe(() => obj.constructor.name, 'TypedArray')}(${arr.length})`
      return deep ? `${name} […]` : `${name} ${this.list('[', ']', arr.length, (i) => this.child(() => arr[i], level))}`
    }
    if (obj instanceof Map) {
      const entries = first(Map.prototype.entries.call(obj), this.items) as Array<[unknown, unknown]>
      const shown = (i: number) => `${this.child(() => entries[i]![0], level)} => ${this.child(() => entries[i]![1], level)}`
      return deep ? `Map(${obj.size}) {…}` : `Map(${obj.size}) ${this.list('{', '}', obj.size, shown)}`
    }
    if (obj instanceof Set) {
      const values = first(Set.prototype.values.call(obj), this.items)
      return deep ? `Set(${obj.size}) {…}` : `Set(${obj.size}) ${this.list('{', '}', obj.size, (i) => this.child(() => values[i], level))}`
    }
    const keys = Object.keys(obj)
    const name = safe(() => {
      const proto: unknown = Object.getPrototypeOf(obj)
      const ctor = proto === null ? undefined : (proto as {constructor?: {name?: unknown}}).constructor?.name
      return typeof ctor === 'string' && ctor !== 'Object' ? `${printable(ctor, {max: 40})} ` : ''
    }, '')
    if (deep) return `${name}{…}`
    const entry = (i: number) => {
      const k = keys[i]!
      return `${IDENTIFIER.test(k) ? k : quoted(k, 40)}: ${this.child(() => (obj as Record<string, unknown>)[k], level)}`
    }
    return `${name}${this.list('{', '}', keys.length, entry)}`
  }

  /** A value inside a container: read (a getter may throw) and shown one level down. */
  private child(read: () => unknown, level: number): string {
    try {
      return this.show(read(), level + 1)
    } catch {
      return '[unreadable]'
    }
  }

  private list(open: string, close: string, length: number, item: (i: number) => string): string {
    const parts: string[] = []
    for (let i = 0; i < length && i < this.items; i++) {
      if (this.used >= this.max) break
      parts.push(item(i))
    }
    const more = length - parts.length
    if (more > 0) parts.push(`… ${more} more`)
    return `${open}${parts.join(', ')}${close}`
  }
}

/** The first n values of an iterator, without walking the rest. */
function first(it: Iterator<unknown>, n: number): unknown[] {
  const out: unknown[] = []
  for (let r = it.next(); !r.done && out.length < n; r = it.next()) out.push(r.value)
  return out
}

function safe<T>(f: () => T, fallback: T): T {
  try {
    return f()
  } catch {
    return fallback
  }
}

/**
 * An error not made by RunnerError (oclif's flag errors, a Node error, a bug) with its message and
 * stack made printable in place, line breaks kept, before oclif prints them: the last line of
 * defence for text that embeds a file's strings without going through a RunnerError.
 */
export function printableError<T>(error: T): T {
  if (!(error instanceof Error)) return error
  try {
    error.message = printable(error.message, {max: 4000, newlines: true})
    if (typeof error.stack === 'string') error.stack = printable(error.stack, {max: 20_000, newlines: true})
  } catch {
    // A frozen error keeps its text; oclif prints it as it is.
  }
  return error
}

/**
 * The printable-text sanitiser (src/lib/text/printable.ts) against anchors that are not our code:
 *  - the JavaScript engine's Unicode tables: after printable/quoted, no character of the general
 *    categories Cc (C0, DEL, C1), Cf (format: bidi, zero-width, tags), Zl, Zp or Cs (lone
 *    surrogates) is left, checked over every code point U+0000..U+10FFFF;
 *  - the engine's string-literal parser: quoted(s) read back as a JavaScript literal is s again, so
 *    the escapes are JavaScript's own (`\x1B`, `\u{202E}`) and lose nothing;
 *  - the bytes a terminal acts on: the UTF-8 of the output holds no byte below 0x20, no 0x7F and no
 *    C1 sequence (C2 80..C2 9F);
 *  - JSON.parse: printableJson reads back as the same value.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {runInNewContext} from 'node:vm'

import {preview, printable, printableError, printableJson, quoted} from '../../../src/lib/text/printable.js'

/** Unicode's own classes, by the engine's tables: what must never reach a terminal as itself. */
const UNSAFE_CATEGORY = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u
const UNSAFE_CATEGORY_ALL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/gu

/** Read text as a JavaScript string literal, with the engine's own parser. */
const literal = (text: string): string => runInNewContext(text) as string

/** Bytes a terminal would act on: C0, DEL, and C1 as UTF-8 (C2 80..C2 9F). */
function terminalBytes(text: string): number[] {
  const b = Buffer.from(text, 'utf8')
  const found: number[] = []
  for (let i = 0; i < b.length; i++) {
    if (b[i]! < 0x20 || b[i] === 0x7f) found.push(b[i]!)
    if (b[i] === 0xc2 && b[i + 1]! >= 0x80 && b[i + 1]! <= 0x9f) found.push(0x80 + (b[i + 1]! - 0x80))
  }
  return found
}

/** Every code point, in chunks of `size` (lone surrogates included: they are code points of a JS string). */
function* codePointChunks(size: number): Generator<string> {
  for (let start = 0; start <= 0x10ffff; start += size) {
    const cps: string[] = []
    for (let cp = start; cp < Math.min(start + size, 0x110000); cp++) cps.push(String.fromCodePoint(cp))
    yield cps.join('')
  }
}

describe('printable and quoted', () => {
  test('the characters of issue #18 are escaped, readably, and named by their code point', () => {
    const hostile: Array<[string, string]> = [
      ['\0', '\\x00'],
      ['\x07', '\\x07'],
      ['\x1b', '\\x1B'],
      ['\n', '\\x0A'],
      ['\r', '\\x0D'],
      ['\x7f', '\\x7F'],
      ['\u0085', '\\x85'],
      ['\u009b', '\\x9B'],
      ['\u200b', '\\u{200B}'],
      ['\u200f', '\\u{200F}'],
      ['\u2028', '\\u{2028}'],
      ['\u2029', '\\u{2029}'],
      ['\u202a', '\\u{202A}'],
      ['\u202e', '\\u{202E}'],
      ['\u2066', '\\u{2066}'],
      ['\u2069', '\\u{2069}'],
      ['\ufeff', '\\u{FEFF}'],
      ['\ud800', '\\u{D800}'],
      ['\udfff', '\\u{DFFF}'],
      ['\u{e0041}', '\\u{E0041}'],
    ]
    for (const [ch, escape] of hostile) assert.equal(printable(`a${ch}b`), `a${escape}b`, `U+${ch.codePointAt(0)!.toString(16)}`)
    assert.equal(printable('\x1b[2J\x1b]0;pwned\x07'), '\\x1B[2J\\x1B]0;pwned\\x07')
  })

  test('over every code point: no Cc, Cf, Zl, Zp or lone surrogate is left, and the rest is kept as it is', () => {
    let escaped = 0
    for (const chunk of codePointChunks(4096)) {
      const out = printable(chunk, {max: Infinity})
      assert.doesNotMatch(out, UNSAFE_CATEGORY)
      assert.deepEqual(terminalBytes(out), [])
      // The safe characters pass through unchanged: the output is the input with only the unsafe ones replaced.
      assert.equal(
        out,
        chunk.replace(UNSAFE_CATEGORY_ALL, (c) => printable(c)),
      )
      escaped += (chunk.match(UNSAFE_CATEGORY_ALL) ?? []).length
    }
    // Unicode 15: 65 Cc, 2048 Cs, the Cf (170 or so), Zl and Zp: far more than the 30-odd of a hand-made list.
    assert.ok(escaped > 2200, `only ${escaped} code points escaped`)
  })

  test('quoted(s) read back by the JavaScript parser is s, for every code point', () => {
    for (const chunk of codePointChunks(2048)) {
      const q = quoted(chunk, Infinity)
      assert.doesNotMatch(q, UNSAFE_CATEGORY)
      assert.equal(literal(q), chunk)
    }
    assert.equal(literal(quoted('say "hi" \\ bye\x1b')), 'say "hi" \\ bye\x1b')
  })

  test('a long string is cut with an ellipsis and the count of what was cut, in characters', () => {
    const s = `${'😀'.repeat(150)}${'x'.repeat(1000)}`
    const out = printable(s, {max: 100})
    assert.ok(out.startsWith('😀'.repeat(50)), out)
    const m = /… \((\d+) more characters\)$/.exec(out)
    assert.ok(m, out)
    assert.equal(Number(m[1]), [...s].length - 50)
    // An escape is never cut in half.
    assert.match(printable('\x1b'.repeat(100), {max: 10}), /^(\\x1B){2}… \(98 more characters\)$/)
    // Short and clean: returned as it is.
    assert.equal(printable('blk.0.attn_q.weight'), 'blk.0.attn_q.weight')
  })

  test('printable is idempotent (a message embedding printable names may pass through it again)', () => {
    for (const s of ['a\x1bb', 'C:\\path\\x1B', '\u202e\ud800', 'plain']) assert.equal(printable(printable(s)), printable(s))
  })

  test('newlines: line feeds and tabs kept, carriage returns and the rest still escaped', () => {
    assert.equal(printable('{% a %}\n\tb\r\x1b', {newlines: true, max: Infinity}), '{% a %}\n\tb\\x0D\\x1B')
  })
})

describe('printableJson', () => {
  test('parses back to the same value, with no raw control, format or separator character', () => {
    const value = {
      name: 'x\x1b[2J\x1b]0;t\x07\u009b31m\u202eevil\x7f\u2028\u{e0041}',
      lone: '\ud800',
      'key\u0085': [1, 'tab\there'],
    }
    for (const space of [undefined, 2]) {
      const text = printableJson(value, undefined, space)
      assert.deepEqual(JSON.parse(text), value)
      // JSON's own indentation is the only raw line feed.
      assert.doesNotMatch(text.replaceAll('\n', ''), UNSAFE_CATEGORY)
      assert.deepEqual(terminalBytes(text.replaceAll('\n', '')), [])
    }
    assert.match(printableJson('\u009b\u202e'), /^"\\u009b\\u202e"$/)
  })
})

describe('preview never throws and stays short', () => {
  const revoked = Proxy.revocable({}, {})
  revoked.revoke()
  const cyclic: Record<string, unknown> = {a: 1}
  cyclic.self = cyclic
  let deep: unknown = 'bottom'
  for (let i = 0; i < 10_000; i++) deep = [deep]
  const hostile: Array<[string, unknown]> = [
    ['a cycle', cyclic],
    ['10,000 levels of nesting', deep],
    ['a 10 MB string', 'x'.repeat(10 << 20)],
    ['a BigInt', 12n],
    ['a throwing getter', Object.defineProperty({}, 'boom', {enumerable: true, get: () => assert.fail('read')})],
    ['a revoked proxy', revoked.proxy],
    ['a proxy whose traps throw', new Proxy({}, {ownKeys: () => assert.fail('keys'), getPrototypeOf: () => assert.fail('proto')})],
    ['a null-prototype object', Object.assign(Object.create(null) as object, {a: 1})],
    ['an object whose toString throws', {toString: () => assert.fail('toString')}],
    ['a symbol', Symbol('s\x1b')],
    ['a function', function named() {}],
    ['a huge Map', new Map(Array.from({length: 100_000}, (_, i) => [i, i]))],
    ['a huge array', new Array(1_000_000).fill(0)],
    ['a typed array', new Float32Array(1000)],
    ['an invalid Date', new Date(Number.NaN)],
    ['an Error with control characters', new Error('bad\x1b[2J')],
    ['a wide object', Object.fromEntries(Array.from({length: 10_000}, (_, i) => [`k\x1b${i}`, 'v'.repeat(1000)]))],
  ]
  for (const [what, value] of hostile) {
    test(what, () => {
      const t0 = performance.now()
      const out = preview(value)
      assert.ok(performance.now() - t0 < 500, `${what} took ${performance.now() - t0} ms`)
      assert.equal(typeof out, 'string')
      assert.ok(out.length <= 160, `${what}: ${out.length} characters`)
      assert.doesNotMatch(out, UNSAFE_CATEGORY)
    })
  }

  test('what it shows', () => {
    assert.equal(preview(12n), '12n')
    assert.equal(preview(-0), '-0')
    assert.equal(preview('a"b'), '"a\\"b"')
    assert.equal(preview({a: [1, 'x'], 'b c': null}), '{a: [1, "x"], "b c": null}')
    assert.equal(preview(cyclic), '{a: 1, self: [circular]}')
    assert.equal(preview([[[[1]]]], {depth: 2}), '[[[…]]]')
    assert.equal(
      preview(
        Array.from({length: 20}, (_, i) => i),
        {items: 3},
      ),
      '[0, 1, 2, … 17 more]',
    )
    assert.equal(preview(Object.defineProperty({}, 'x', {enumerable: true, get: () => assert.fail('read')})), '{x: [unreadable]}')
  })
})

test('printableError: an error not made by RunnerError gets a printable message and stack, lines kept', () => {
  const e = printableError(new Error('line one\x1b[2J\nline two'))
  assert.equal(e.message, 'line one\\x1B[2J\nline two')
  assert.doesNotMatch(e.stack!.replaceAll('\n', ''), UNSAFE_CATEGORY)
  assert.equal(printableError('not an error'), 'not an error')
})

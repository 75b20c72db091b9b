/**
 * The engine's program check (native/src/grammar/program.c) on what TypeScript's lowering never
 * writes but a hostile program could: code point ranges over the surrogates (no UTF-8 spells them:
 * a partial code point would be kept alive with no completion) and ranges that touch (the coverage
 * test of a set assumes merged ranges). Both are refused by name; lowering never writes them, even
 * from a front end's unnormalised set or a literal with a lone surrogate.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {GrammarMatcher, NativeGrammar} from '../../../src/lib/engine/index.js'
import {alt, chars, lit} from '../../../src/lib/grammar/ir.js'
import {GrammarError, lowerGrammar} from '../../../src/lib/grammar/lower.js'
import {PROGRAM_HEADER} from '../../../src/lib/grammar/program.js'

/** A one-set program for `root ::= [lo0-hi0 lo1-hi1]`, its two ranges then overwritten. */
function twoRanges(r: [number, number, number, number]): Int32Array {
  const p = lowerGrammar({
    start: 'root',
    rules: new Map([
      [
        'root',
        chars([
          [0x41, 0x41],
          [0x43, 0x43],
        ]),
      ],
    ]),
  }).program.slice()
  const nSets = p[2]!
  p.set(r, PROGRAM_HEADER + nSets + 1)
  return p
}

const refused = (e: unknown) =>
  (e as {code?: string}).code === 'ENGINE_INVALID_ARGUMENT' && /surrogates|adjacent/.test((e as Error).message)

test('the program check refuses ranges over surrogates and ranges that touch', () => {
  assert.doesNotThrow(() => NativeGrammar.create(twoRanges([0x41, 0x41, 0x43, 0x43])))
  assert.throws(() => NativeGrammar.create(twoRanges([0x41, 0x41, 0xd800, 0xd800])), refused)
  assert.throws(() => NativeGrammar.create(twoRanges([0x41, 0x41, 0xd000, 0xe000])), refused)
  assert.throws(() => NativeGrammar.create(twoRanges([0x41, 0x41, 0x42, 0x43])), refused)
})

test('lowering normalises a front end set (surrogates out, ranges merged) and refuses a lone surrogate in a literal', () => {
  const loose = chars([
    [0x41, 0x42],
    [0x43, 0x44],
    [0xd7ff, 0xe000],
  ])
  const g = NativeGrammar.create(lowerGrammar({start: 'root', rules: new Map([['root', loose]])}).program)
  const accepts = (s: string) => {
    const m = GrammarMatcher.create(g)
    return m.acceptBytes(new TextEncoder().encode(s)) === -1 && m.complete
  }
  assert.ok(accepts('C') && accepts('\ud7ff') && accepts('\ue000'))
  assert.equal(GrammarMatcher.create(g).acceptBytes(Uint8Array.of(0xed, 0xa0)), 1, 'ED A0 starts a surrogate: refused at its second byte')
  assert.throws(() => lowerGrammar({start: 'root', rules: new Map([['root', lit('a\ud800')]])}), GrammarError)
})

test('a 70,000-member enum is a trie to the matcher (left-factored alternatives): a handful of stacks, not 70,000 (over the cap of 65,536)', () => {
  const members = Array.from({length: 70000}, (_, i) => `k${i}x`)
  const g = {start: 'root', rules: new Map([['root', alt(...members.map((m) => lit(m)))]])}
  const m = GrammarMatcher.create(NativeGrammar.create(lowerGrammar(g).program))
  const enc = new TextEncoder()
  assert.equal(m.acceptBytes(enc.encode('k5999')), -1)
  assert.equal(m.complete, false)
  assert.equal(m.acceptBytes(enc.encode('9x')), -1)
  assert.equal(m.complete, true)
  const n = GrammarMatcher.create(NativeGrammar.create(lowerGrammar(g).program))
  assert.equal(n.acceptBytes(enc.encode('k70000x')), 5, 'k70000x is not a member')
})

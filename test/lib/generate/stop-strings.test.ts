// Stop strings over streamed pieces: the released text must equal, for every way of cutting the
// text into pieces, what String.prototype.indexOf says the text is before the first stop string
// (the outside reference), and no released prefix may end inside a stop string that later matches.
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {StopMatcher} from '../../../src/lib/generate/stop-strings.js'

function reference(text: string, stops: string[]): {out: string; matched: boolean} {
  let cut = -1
  for (const s of stops) {
    const i = text.indexOf(s)
    if (i >= 0 && (cut < 0 || i < cut)) cut = i
  }
  return cut < 0 ? {out: text, matched: false} : {out: text.slice(0, cut), matched: true}
}

test('every split of the text into pieces releases what indexOf says, and never a partial stop string', () => {
  const cases: Array<[string, string[]]> = [
    ['Once upon a time, Lily saw a dog.', ['Lily']],
    ['abababc', ['abc']],
    ['aaaab', ['aab', 'b']],
    ['no stop here', ['xyz', 'q']],
    ['the end.\n\nUSER: more', ['\nUSER:', '\n\n\n']],
    ['ééé😀x', ['😀']],
  ]
  let rng = 7
  const rand = () => (rng = (rng * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  for (const [text, stops] of cases) {
    const expected = reference(text, stops)
    for (let trial = 0; trial < 200; trial++) {
      const m = new StopMatcher(stops)
      let out = ''
      let i = 0
      while (i < text.length && !m.matched) {
        const n = 1 + Math.floor(rand() * 4)
        out += m.push(text.slice(i, i + n))
        i += n
        // Whatever is out so far is a prefix of the final answer.
        assert.ok(expected.out.startsWith(out), `${JSON.stringify(out)} released for ${JSON.stringify(text)} / ${JSON.stringify(stops)}`)
      }
      out += m.flush()
      assert.equal(out, expected.out)
      assert.equal(m.matched, expected.matched)
    }
  }
})

test('without stop strings, text passes straight through', () => {
  const m = new StopMatcher([])
  assert.equal(m.push('abc'), 'abc')
  assert.equal(m.flush(), '')
})

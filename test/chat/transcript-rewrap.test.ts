/**
 * ReplyWrapper.rewrap, as a pure function: a reply being written, wrapped again at a new width
 * (the terminal was resized) at any point, then continued, gives exactly the rows wrapText gives for
 * the whole reply at the new width: none twice, none lost, none at the old width.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {ReplyWrapper, wrapText} from '../../src/lib/chat-ui/transcript.js'

const REPLY =
  '  "Here?" Annabyed.\n"Okay, Annabyes!" Annabyed.\nAs she was walking, she saw a big, scary. She was so excited to ' +
  'see whats. She picked it up and put it in her hand. As she was done, she saw a big tree.\n\nThe end.'

test('a reply wrapped again part-way gives the rows of the whole reply at the new width', () => {
  const pieces = REPLY.match(/.{1,3}/gs)!
  const want = REPLY.trimStart()
    .split('\n')
    .flatMap((p) => wrapText(p, 20))
  for (let at = 0; at <= pieces.length; at++) {
    const wrapper = new ReplyWrapper(60)
    let rows: string[] = []
    pieces.forEach((piece, i) => {
      if (i === at) rows = wrapper.rewrap(20).rows
      rows.push(...wrapper.push(piece).rows)
    })
    if (at === pieces.length) rows = wrapper.rewrap(20).rows
    rows.push(...wrapper.end())
    assert.deepEqual(rows, want, `rewrapped after ${JSON.stringify(pieces.slice(0, at).join(''))}`)
    assert.equal(wrapper.text, REPLY.trimStart())
  }
})

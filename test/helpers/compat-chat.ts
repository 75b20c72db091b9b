// Helpers for the tests of the compat-matrix's chat checks (chat_smoke, serve_smoke, tool_call,
// structured): a roster row built by hand, a check environment, and copies of stories260K with a
// chat template of the test's choosing (a working one, or one that raises: the mutation that must
// make exactly the template-driven checks fail).
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {basename, join} from 'node:path'

import type {CheckEnv, CheckParams, RosterRow} from '../../src/lib/compat/types.js'
import {GgufValueType, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'

/** A row for a model file (sha256 and type are the load check's business, not these checks'). */
export function rowFor(path: string, checks: Record<string, CheckParams> = {}): RosterRow {
  return {
    id: basename(path).replace(/\.gguf$/, ''),
    path,
    rosterPath: path,
    sha256: '',
    architecture: 'llama',
    type: 'F32',
    checks,
    expectedFailures: {},
  }
}

export function checkEnv(tmpDir: string, signal = new AbortController().signal): CheckEnv {
  return {tmpDir, signal, threads: 1}
}

/** A template that renders every history the way a real one does (USER:/ASSISTANT: turns). */
export const PLAIN_TEMPLATE =
  "{% for m in messages %}{% if m.role == 'system' %}{{ m.content + '\\n\\n' }}{% elif m.role == 'user' %}{{ 'USER: ' + m.content + '\\n' }}" +
  "{% else %}{{ 'ASSISTANT: ' + m.content + '\\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"

/** A template that parses but raises on every render: the broken build of a chat model. */
export const BROKEN_TEMPLATE = "{{ raise_exception('this chat template is broken on purpose') }}"

/** A copy of `source` carrying `template` as tokenizer.chat_template, under `dir`. */
export async function withTemplate(source: string, dir: string, template: string, name: string): Promise<string> {
  const m = readGgufModel(source)
  const file = join(dir, `${name}.gguf`)
  await writeGguf(file, {
    kvs: [
      ...m.kvs.filter((kv) => kv.key !== 'tokenizer.chat_template'),
      {key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: template},
    ],
    tensors: m.tensors.map((x) => ({name: x.name, type: x.type, shape: [...x.shape], data: {file: x.file, offset: x.offset}})),
  })
  return file
}

/** A scratch folder, and its removal. */
export function scratch(prefix: string): {dir: string; remove: () => void} {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  return {dir, remove: () => rmSync(dir, {recursive: true, force: true})}
}

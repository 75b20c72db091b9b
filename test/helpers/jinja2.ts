/**
 * Jinja2 (Python) as a second renderer of chat templates: test/helpers/jinja2_render.py, set up as
 * transformers' apply_chat_template sets it up. Undefined when python3 or its jinja2 is missing.
 */
import {spawnSync} from 'node:child_process'
import {fileURLToPath} from 'node:url'

const SCRIPT = fileURLToPath(new URL('./jinja2_render.py', import.meta.url))

let available: boolean | undefined

export function hasJinja2(): boolean {
  available ??= spawnSync('python3', ['-c', 'import jinja2'], {stdio: 'ignore'}).status === 0
  return available
}

export const NO_JINJA2_REASON = 'python3 with jinja2 is not installed (the Jinja2 rendering anchor)'

export function renderWithJinja2(template: string, context: Record<string, unknown>): string {
  const r = spawnSync('python3', [SCRIPT], {input: JSON.stringify({template, context}), encoding: 'utf8'})
  if (r.status !== 0) throw new Error(`jinja2 failed: ${r.stderr}`)
  return r.stdout
}

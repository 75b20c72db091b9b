/**
 * Every flag's default is in --help (issue #22): a flag either has oclif's `default` (shown as
 * `[default: …]`), says `default …` in its description (the flags that stay undefined so a command can
 * tell a given value from its default), or is in NONE: its absence means nothing is given or done.
 * The sampling flags show llama.cpp's defaults (common/common.h common_params_sampling: temp 0.80,
 * top_k 40, top_p 0.95, min_p 0.05, penalty_last_n 64), which until now only docs/cli.md showed.
 * In process through oclif's Config and Help: no CLI spawned.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {Config, Help} from '@oclif/core'

import {REPO_ROOT} from '../helpers/shared.js'

/** Flags without a default value: absent, they give nothing (no input, no output, no constraint, no key). */
const NONE: ReadonlySet<string> = new Set([
  'model', // the model: required, or given as the argument
  'prompt',
  'file', // inputs: standard input when neither is given
  'system', // chat: no system message
  'json-schema',
  'grammar', // no constraint
  'transcript',
  'sign-key',
  'transcript-prev', // no receipt
  'save-logits',
  'kld', // score: no base-logits file written or compared
  'key', // inspect: the summary instead of one key
  'roster', // compat-matrix: one of it and the schema switches is required
  'out',
  'markdown',
  'baseline', // compat-matrix: no file written, no gate
  'remove-sublayer',
  'type-plan', // quantize: nothing removed, the built-in mix
  'api-key', // serve: no authentication
  'prev', // verify: no link checked
  'val',
  'resume', // train-lora: no validation set, a fresh start
])

test('every flag of every command shows its default in --help, or is one whose absence means none', async () => {
  const config = await Config.load(REPO_ROOT)
  const missing: string[] = []
  for (const c of config.commands.filter((x) => x.pluginName === config.name)) {
    for (const [name, f] of Object.entries(c.flags)) {
      if (f.type !== 'option' || f.required || f.multiple || f.default !== undefined || NONE.has(name)) continue
      if (!/\bdefault\b/i.test(f.description ?? '')) missing.push(`${c.id} --${name}`)
    }
  }
  assert.deepEqual(missing, [])
})

test("run --help shows llama.cpp's sampling defaults", async () => {
  const config = await Config.load(REPO_ROOT)
  const help = new Help(config, {stripAnsi: true}).formatCommand(config.findCommand('run', {must: true})).replaceAll(/\s+/g, ' ')
  for (const [flag, value] of [
    ['--temp=T', '0.8'],
    ['--top-k=<value>', '40'],
    ['--top-p=P', '0.95'],
    ['--min-p=P', '0.05'],
    ['--repeat-penalty=X', '1'],
    ['--repeat-last-n=<value>', '64'],
    ['--n-gpu-layers=N', '0'],
  ])
    assert.match(
      help,
      new RegExp(`${flag.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')} (?:(?! --).)*?default ${value.replace('.', '\\.')}\\b`),
      flag,
    )
})

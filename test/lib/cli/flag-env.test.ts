/**
 * Every command's flags (issue #22). Every flag from RUNNER_<FLAG>, as llama.cpp's LLAMA_ARG_* and
 * ollama's OLLAMA_* give theirs: the command line wins, a bad value is refused naming the variable,
 * --help shows the variable. Every flag's default in --help: oclif's `default` (`[default: …]`), `default …` in the
 * description (flags that stay undefined so a command can tell a given value from its default), or
 * in NONE (its absence means nothing is given or done); the sampling flags show llama.cpp's defaults
 * (common/common.h common_params_sampling: temp 0.80, top_k 40, top_p 0.95, min_p 0.05,
 * penalty_last_n 64), which only docs/cli.md showed before. In process, through oclif's own Config,
 * parser and Help (no CLI spawned, one Config for all): the outside facts are oclif's parse of the
 * tokens and its help text, and the names users set (RUNNER_API_KEY already worked).
 */
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {Config, Help} from '@oclif/core'

import {envArguments, envVariable, NOT_FROM_ENV} from '../../../src/lib/cli/flag-env.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {REPO_ROOT} from '../../helpers/shared.js'

const flags = {
  'ctx-size': {type: 'option', char: 'c', aliases: ['ctx']},
  temp: {type: 'option'},
  json: {type: 'boolean'},
  lora: {type: 'option', multiple: true},
  prompt: {type: 'option', char: 'p'},
  'api-key': {type: 'option', env: 'RUNNER_API_KEY'},
} as const

test('names: upper case, dashes to underscores; the per-invocation flags have none', () => {
  assert.equal(envVariable('ctx-size'), 'RUNNER_CTX_SIZE')
  assert.equal(envVariable('temp'), 'RUNNER_TEMP')
  assert.equal(envVariable('prompt'), undefined)
  assert.equal(envVariable('force'), undefined)
})

test('the command line wins, by any spelling of the flag', () => {
  const env = {RUNNER_CTX_SIZE: '2048', RUNNER_TEMP: '0.5'}
  assert.deepEqual(envArguments(flags, ['-p', 'hi'], env).argv, ['-p', 'hi', '--ctx-size=2048', '--temp=0.5'])
  for (const given of [['-c', '64'], ['-c64'], ['--ctx', '64'], ['--ctx-size=64']])
    assert.deepEqual(envArguments(flags, given, env).argv, [...given, '--temp=0.5'], given.join(' '))
  // after --, a token is not a flag: the variable still applies, before the --
  assert.deepEqual(envArguments(flags, ['--', '-c'], {RUNNER_CTX_SIZE: '8'}).argv, ['--ctx-size=8', '--', '-c'])
})

test('switches: 1/true/yes/on and 0/false/no/off; anything else refused naming the variable', () => {
  for (const v of ['1', 'true', 'YES', 'on']) assert.deepEqual(envArguments(flags, [], {RUNNER_JSON: v}).argv, ['--json'], v)
  for (const v of ['0', 'false', 'No', 'off', '']) assert.deepEqual(envArguments(flags, [], {RUNNER_JSON: v}).argv, [], v)
  assert.throws(
    () => envArguments(flags, [], {RUNNER_JSON: 'banana'}),
    (e: unknown) => e instanceof RunnerError && e.code === 'BAD_ENV' && /^RUNNER_JSON="banana": --json is a switch/.test(e.message),
  )
})

test('repeatable flags take comma-separated values; excluded flags and foreign variables are not read', () => {
  assert.deepEqual(envArguments(flags, [], {RUNNER_LORA: 'a.gguf, b.gguf:0.5'}).argv, ['--lora=a.gguf', '--lora=b.gguf:0.5'])
  assert.deepEqual(envArguments(flags, ['--lora', 'c.gguf'], {RUNNER_LORA: 'a.gguf'}).argv, ['--lora', 'c.gguf'])
  assert.deepEqual(envArguments(flags, [], {RUNNER_PROMPT: 'hi'}).argv, [])
  // GitHub Actions sets RUNNER_TEMP to a folder on every job: there it is not --temp
  assert.deepEqual(envArguments(flags, [], {RUNNER_TEMP: '/home/runner/work/_temp', GITHUB_ACTIONS: 'true'}).argv, [])
  assert.deepEqual(envArguments(flags, [], {RUNNER_API_KEY: 'k'}).argv, ['--api-key=k'])
})

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

/** The compiled commands extend dist's RunnerCommand, not src's: by the chain's names. */
function extendsRunnerCommand(c: unknown): boolean {
  for (let p = c; p; p = Object.getPrototypeOf(p)) if ((p as {name?: string}).name === 'RunnerCommand') return true
  return false
}

describe('through oclif', () => {
  let config: Config
  const saved = {...process.env}
  before(async () => {
    config = await Config.load(REPO_ROOT)
    await config.runHook('init', {argv: [], id: 'run'})
  })
  after(() => {
    for (const k of Object.keys(process.env)) if (k.startsWith('RUNNER_') && !(k in saved)) delete process.env[k]
  })

  async function parseRun(argv: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
    return (await parseRunAll(argv, env)).flags
  }

  async function parseRunAll(argv: string[], env: Record<string, string>) {
    Object.assign(process.env, env)
    try {
      const Run = await config.findCommand('run', {must: true}).load()
      const cmd = new Run(argv, config) as unknown as {
        parse(c: unknown): Promise<{flags: Record<string, unknown>; args: Record<string, unknown>}>
      }
      return await cmd.parse(Run)
    } finally {
      for (const k of Object.keys(env)) delete process.env[k]
    }
  }

  test('a variable gives the flag, the command line wins', async () => {
    const f = await parseRun(['-m', 'x.gguf', '--temp', '0.2'], {RUNNER_THREADS: '3', RUNNER_TEMP: '0.5', RUNNER_JSON: 'true'})
    assert.equal(f.threads, 3)
    assert.equal(f.temp, '0.2')
    assert.equal(f.json, true)
  })

  test("the command's own statics still apply: its argument, strictness", async () => {
    const {args, flags} = await parseRunAll(['x.gguf', '-p', 'hi'], {RUNNER_TOP_K: '5'})
    assert.equal(args.model, 'x.gguf')
    assert.equal(flags['top-k'], 5)
    await assert.rejects(parseRunAll(['x.gguf', 'two'], {}), /Unexpected argument: two/)
  })

  test('a value oclif refuses is refused naming the variable, on one line', async () => {
    await assert.rejects(parseRun(['-m', 'x.gguf'], {RUNNER_THREADS: 'abc'}), (e: unknown) => {
      // the compiled commands' RunnerError (dist), not this file's: by name and code
      assert.ok(e instanceof Error && e.name === 'RunnerError' && (e as RunnerError).code === 'BAD_ENV', String(e))
      assert.match(e.message, /^RUNNER_THREADS="abc": .*--threads.*abc/)
      assert.doesNotMatch(e.message, /\n/)
      return true
    })
    await assert.rejects(
      parseRun(['-m', 'x.gguf'], {RUNNER_KV_TYPE: 'f8'}),
      /RUNNER_KV_TYPE="f8": Expected --kv-type=f8 to be one of: f16, f32$/,
    )
  })

  test('--help shows every flag its variable, on every command of ours; each of them is a RunnerCommand', async () => {
    const ours = config.commands.filter((c) => c.pluginName === config.name)
    assert.ok(ours.length >= 14)
    for (const c of ours) {
      assert.ok(extendsRunnerCommand(await c.load()), `${c.id} is not a RunnerCommand: variables would not be read`)
      for (const [name, f] of Object.entries(c.flags)) {
        const want = name in NOT_FROM_ENV ? undefined : name === 'api-key' ? 'RUNNER_API_KEY' : envVariable(name)
        assert.equal((f as {env?: string}).env, want, `${c.id} --${name}`)
      }
    }
    const help = new Help(config, {stripAnsi: true}).formatCommand(config.findCommand('run', {must: true}))
    assert.match(help, /--ctx-size=<value>\s+\[env: RUNNER_CTX_SIZE\]/)
    assert.doesNotMatch(help, /RUNNER_PROMPT/)
  })

  test('every flag of every command shows its default in --help, or is one whose absence means none', () => {
    const missing: string[] = []
    for (const c of config.commands.filter((x) => x.pluginName === config.name)) {
      for (const [name, f] of Object.entries(c.flags)) {
        if (f.type !== 'option' || f.required || f.multiple || f.default !== undefined || NONE.has(name)) continue
        if (!/\bdefault\b/i.test(f.description ?? '')) missing.push(`${c.id} --${name}`)
      }
    }
    assert.deepEqual(missing, [])
  })

  test("run --help shows llama.cpp's sampling defaults", () => {
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
})

/**
 * Speculative decoding in the commands: `run`, `chat` and `serve` with --draft-lookup and --draft
 * give the bytes they give without it (the reference: the same command without a draft, whose
 * greedy output test/commands/run.test.ts anchors to llama.cpp), report the source and its
 * acceptance, record it in receipts that replay to the same tokens, and refuse what cannot work by
 * name. The server is driven by the real `openai` client.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import OpenAI from 'openai'

import {writeNextnModel} from '../helpers/nextn-model.js'
import {serveProcess} from '../helpers/serve-process.js'
import {hasShared, NO_SHARED_REASON, runCli, runCliWithInput, sharedPath} from '../helpers/shared.js'
import {REPETITIVE, writeOtherVocab} from '../helpers/speculative.js'

const REPEAT = REPETITIVE

describe('speculative decoding in run, chat and serve', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let dir: string
  let otherVocab: string
  const target = () => sharedPath('fixtures', 'llama.gguf')
  const stories = () => sharedPath('models', 'stories260K.gguf')
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'runner-spec-cli-'))
    // stories260K with token 300 renamed: a draft whose vocabulary is not the target's.
    otherVocab = join(dir, 'other-vocab.gguf')
    await writeOtherVocab(stories(), otherVocab)
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  const run = (...extra: string[]) => runCli(['run', target(), '-p', REPEAT, '-n', '48', '-t', '1', '--seed', '5', ...extra])

  test('run: the same bytes with --draft-lookup and --draft, greedy and sampled; --json reports the source and acceptance', () => {
    for (const sampling of [
      ['--temp', '0'],
      ['--temp', '0.8', '--top-k', '20'],
    ]) {
      const plain = run(...sampling)
      assert.equal(plain.status, 0, plain.stderr)
      for (const draft of [
        ['--draft-lookup', '--lookup-ngram-min', '1'],
        ['--draft', stories(), '--draft-p-min', '0', '--draft-max', '4'],
      ]) {
        const spec = run(...sampling, ...draft)
        assert.equal(spec.status, 0, spec.stderr)
        assert.equal(spec.stdout, plain.stdout, `${draft[0]} ${sampling.join(' ')}`)
        assert.match(spec.stderr, new RegExp(`draft ${draft[0] === '--draft' ? 'model' : 'lookup'} \\d+/\\d+ accepted`))
      }
    }
    const json = JSON.parse(run('--temp', '0', '--json', '--draft', stories(), '--draft-p-min', '0').stdout) as {
      speculation: {active: boolean; source: string; drafted: number; accepted: number; acceptance: number; settings: {nMax: number}}
    }
    assert.equal(json.speculation.active, true)
    assert.equal(json.speculation.source, 'model')
    assert.equal(json.speculation.settings.nMax, 16, "llama.cpp's --draft-max default")
    assert.ok(json.speculation.drafted > 0)
    assert.equal(json.speculation.acceptance, Math.round((json.speculation.accepted / json.speculation.drafted) * 1000) / 1000)
  })

  test("--draft-mtp: the model's MTP head gives the same bytes and is recorded; a model without one is warned about, or fatal with --draft-required", async () => {
    const withHead = join(dir, 'llama-nextn.gguf')
    await writeNextnModel(target(), withHead)
    const mtpRun = (model: string, ...extra: string[]) =>
      runCli(['run', model, '-p', REPEAT, '-n', '48', '-t', '1', '--seed', '5', '--temp', '0.8', ...extra])
    const plain = mtpRun(withHead)
    assert.equal(plain.status, 0, plain.stderr)
    assert.equal(plain.stdout, run('--temp', '0.8').stdout, 'the head is not run by the model itself')
    const receipt = join(dir, 'mtp.receipt.json')
    const spec = mtpRun(withHead, '--draft-mtp', '--draft-p-min', '0', '--transcript', receipt)
    assert.equal(spec.status, 0, spec.stderr)
    assert.equal(spec.stdout, plain.stdout)
    assert.match(spec.stderr, /draft mtp \d+\/\d+ accepted/)
    assert.deepEqual((JSON.parse(readFileSync(receipt, 'utf8')) as {config: {draft: unknown}}).config.draft, {
      source: 'mtp',
      nMax: 3,
      pMin: 0,
    })
    assert.equal(runCli(['run', withHead, '-p', 'x', '--draft-mtp', '--draft-lookup']).status, 2)

    const warned = run('--temp', '0', '--draft-mtp')
    assert.equal(warned.status, 0, warned.stderr)
    assert.equal(warned.stdout, run('--temp', '0').stdout)
    assert.match(warned.stderr, /the model's MTP head is not used: this llama model has no MTP head/)
    const fatal = run('--temp', '0', '--draft-mtp', '--draft-required')
    assert.notEqual(fatal.status, 0)
    assert.match(fatal.stderr, /no MTP head/)
  })

  test('a receipt records the draft and replays to the same tokens without it', () => {
    const receipt = join(dir, 'spec.receipt.json')
    const r = run('--temp', '0.7', '--draft-lookup', '--transcript', receipt)
    assert.equal(r.status, 0, r.stderr)
    const body = JSON.parse(readFileSync(receipt, 'utf8')) as {config: {draft: unknown}}
    assert.deepEqual(body.config.draft, {source: 'lookup', nMax: 10, ngramMin: 2, ngramMax: 4})
    const v = runCli(['verify', receipt, '--model', target(), '--json'])
    assert.equal(v.status, 0, v.stdout + v.stderr)
    const verdict = JSON.parse(v.stdout) as {verdict: string; checks: Array<{name: string; detail: string}>}
    assert.equal(verdict.verdict, 'VERIFIED')
    assert.match(verdict.checks.find((c) => c.name === 'replay')!.detail, /replayed with prompt lookup, as recorded/)
    // Made with a draft model: replayed without it, to the same tokens.
    const withModel = join(dir, 'spec-model.receipt.json')
    assert.equal(run('--temp', '0.7', '--draft', stories(), '--draft-p-min', '0', '--transcript', withModel).status, 0)
    const v2 = JSON.parse(runCli(['verify', withModel, '--model', target(), '--json']).stdout) as typeof verdict
    assert.equal(v2.verdict, 'VERIFIED')
    assert.match(v2.checks.find((c) => c.name === 'replay')!.detail, /replayed without the recorded draft model/)
    // And the tokens a receipt records with a draft are the ones a run without it records.
    const plainReceipt = join(dir, 'plain.receipt.json')
    assert.equal(run('--temp', '0.7', '--transcript', plainReceipt).status, 0)
    const tokensOf = (f: string) => (JSON.parse(readFileSync(f, 'utf8')) as {output: {tokens: number[]; logprobs: number[]}}).output
    assert.deepEqual(tokensOf(withModel), tokensOf(plainReceipt))
    assert.deepEqual(tokensOf(receipt), tokensOf(plainReceipt))
  })

  test('refusals: a setting without its source, two sources, and a draft of another vocabulary (warned, or fatal with --draft-required)', () => {
    const orphan = run('--draft-max', '4')
    assert.equal(orphan.status, 2)
    assert.match(orphan.stderr, /--draft-max needs a draft source: --draft or --draft-lookup/)
    assert.equal(run('--draft-p-min', '0.5', '--draft-lookup').status, 2)
    assert.equal(run('--lookup-ngram-max', '3').status, 2)
    assert.equal(run('--draft-lookup', '--draft', stories()).status, 2)
    const badP = run('--draft', stories(), '--draft-p-min', '1.5')
    assert.equal(badP.status, 2)
    assert.match(badP.stderr, /--draft-p-min 1.5 must be a probability/)

    const plain = run('--temp', '0')
    const warned = run('--temp', '0', '--draft', otherVocab)
    assert.equal(warned.status, 0, warned.stderr)
    assert.equal(warned.stdout, plain.stdout)
    assert.match(
      warned.stderr,
      /warning: the draft model .*other-vocab\.gguf is not used: .*token 300 of tokenizer\.ggml\.tokens is "renamed"/,
    )
    assert.match(warned.stderr, /--draft-required makes this an error/)
    assert.match(warned.stderr, /draft model not used/)
    const required = run('--temp', '0', '--draft', otherVocab, '--draft-required')
    assert.equal(required.status, 2)
    assert.match(required.stderr, /DRAFT_VOCAB_MISMATCH/)
  })

  test('chat: the same answers with a draft model', async () => {
    const input = 'Hello there\nTell me a story about Lily\n'
    const args = ['chat', target(), '--json', '-n', '24', '--temp', '0', '-t', '1']
    const plain = await runCliWithInput(args, input)
    const spec = await runCliWithInput([...args, '--draft', stories(), '--draft-p-min', '0'], input)
    assert.equal(spec.status, 0, spec.stderr)
    const answers = (out: string) =>
      out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as {text: string; tokens: number[]}).tokens)
    assert.deepEqual(answers(spec.stdout), answers(plain.stdout))
    const first = JSON.parse(spec.stdout.split('\n')[0]!) as {speculation: {source: string; drafted: number}}
    assert.equal(first.speculation.source, 'model')
    assert.ok(first.speculation.drafted > 0)
  })

  test('serve: answers equal a server without speculation; /v1/capabilities and /metrics report the source and acceptance', async () => {
    const plain = await serveProcess(target(), ['--parallel', '1', '-t', '1'])
    const spec = await serveProcess(target(), ['--parallel', '2', '-t', '1', '--draft-lookup', '--lookup-ngram-min', '1'])
    try {
      const ask = async (url: string) => {
        const client = new OpenAI({baseURL: `${url}/v1`, apiKey: 'none'})
        const r = await client.completions.create({model: 'llama', prompt: REPEAT, max_tokens: 40, temperature: 0.8, seed: 9, logprobs: 2})
        return {text: r.choices[0]!.text, logprobs: r.choices[0]!.logprobs}
      }
      assert.deepEqual(await ask(spec.url), await ask(plain.url))
      const caps = (await (await fetch(`${spec.url}/v1/capabilities`)).json()) as {
        speculation: {active: boolean; source: string; exact: boolean; drafted_tokens: number; accepted_tokens: number; acceptance: number}
      }
      assert.equal(caps.speculation.active, true)
      assert.equal(caps.speculation.source, 'lookup')
      assert.ok(caps.speculation.drafted_tokens > 0)
      assert.equal(
        caps.speculation.acceptance,
        Math.round((caps.speculation.accepted_tokens / caps.speculation.drafted_tokens) * 1000) / 1000,
      )
      const metrics = await (await fetch(`${spec.url}/metrics`)).text()
      assert.match(metrics, new RegExp(`^runner_draft_tokens_total\\{source="lookup"\\} ${caps.speculation.drafted_tokens}$`, 'm'))
      assert.match(
        metrics,
        new RegExp(`^runner_draft_accepted_tokens_total\\{source="lookup"\\} ${caps.speculation.accepted_tokens}$`, 'm'),
      )
      const plainCaps = (await (await fetch(`${plain.url}/v1/capabilities`)).json()) as {speculation: {active: boolean}}
      assert.equal(plainCaps.speculation.active, false)
    } finally {
      plain.child.kill('SIGTERM')
      spec.child.kill('SIGTERM')
      await Promise.all([plain.exited, spec.exited])
    }
  })
})

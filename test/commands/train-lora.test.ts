/**
 * `runner train-lora` end to end on stories260K. Anchors outside our code: llama.cpp (node-llama-cpp
 * 3.22.1's context `lora` option, CPU, one thread) loads the trained adapter and gives runner's
 * teacher-forced log-probabilities and greedy tokens (the margin rule of shared/reference/README.md);
 * the learning is measured on held-out text of the fixture's style (fixtures/lora), written for these
 * tests; the chat mask is checked against ChatML's documented layout. The contracts: the same command
 * gives the same adapter bytes for 1 and 2 threads, a checkpoint resumes bit for bit (after Ctrl+C
 * too, which exits 130), and bad input is refused by name before any training.
 */
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {getLlama, LlamaLogLevel} from 'node-llama-cpp'

import {Model} from '../../src/lib/engine/index.js'
import {readTrainingData} from '../../src/lib/train/index.js'
import {compareWithLlamaCpp} from '../helpers/llama-cpp.js'
import {scoreStories} from '../helpers/score-stories.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCliAsync, sharedPath} from '../helpers/shared.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON
const STORIES = sharedPath('models', 'stories260K.gguf')
const TRAIN = join(REPO_ROOT, 'fixtures', 'lora', 'captains-log-train.txt')
const VAL = join(REPO_ROOT, 'fixtures', 'lora', 'captains-log-val.txt')
const ALL = 'q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj'

const dir = mkdtempSync(join(tmpdir(), 'runner-train-lora-'))
after(() => rmSync(dir, {recursive: true, force: true}))

interface TrainJson {
  adapter: string
  steps: number
  curve: Array<{step: number; loss: number}>
  validation: Array<{step: number; loss: number; ppl: number}>
  tokensPerSecond: number
}

/** train-lora on stories260K; --data and --ctx default to the fixture and 64 unless `extra` gives them. */
const base = (out: string, ...extra: string[]) => [
  'train-lora',
  '-m',
  STORIES,
  '--out',
  out,
  ...(extra.includes('--data') ? [] : ['--data', TRAIN]),
  ...(extra.includes('--ctx') ? [] : ['--ctx', '64']),
  ...extra,
]

async function train(out: string, ...extra: string[]): Promise<TrainJson> {
  const r = await runCliAsync([...base(out, ...extra), '--json'], {timeoutMs: 120_000})
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as TrainJson
}

describe('runner train-lora', {skip: SKIP}, () => {
  const trained = join(dir, 'captain.gguf')
  let run: TrainJson

  test('it learns the style: held-out perplexity falls well below the base model', async (t) => {
    run = await train(
      trained,
      '--val',
      VAL,
      '--targets',
      ALL,
      '--rank',
      '8',
      '--lr',
      '3e-3',
      '--warmup',
      '5',
      '--steps',
      '60',
      '--eval-every',
      '20',
    )
    const before = run.validation.find((v) => v.step === 0)!
    const afterTraining = run.validation.at(-1)!
    t.diagnostic(
      `stories260K, ${run.steps} steps: train loss ${run.curve[0]!.loss.toFixed(3)} -> ${run.curve.at(-1)!.loss.toFixed(3)}; ` +
        `held-out ppl ${before.ppl.toFixed(3)} -> ${afterTraining.ppl.toFixed(3)}; ${run.tokensPerSecond} tokens/s`,
    )
    assert.ok(afterTraining.ppl < before.ppl / 4, `held-out perplexity ${before.ppl} -> ${afterTraining.ppl}`)
    assert.ok(run.curve.at(-1)!.loss < run.curve[0]!.loss / 4)
    // Forgetting: the base's own corpus (llama.cpp's reference text), scored without and with the adapter.
    const score = async (...extra: string[]) => (await scoreStories(...extra)).ppl
    const [plain, adapted] = await Promise.all([score(), score('--lora', trained)])
    t.diagnostic(`forgetting: corpus-stories.txt perplexity ${plain.toFixed(3)} (base) -> ${adapted.toFixed(3)} (with the adapter)`)
    assert.ok(adapted > plain, 'an adapter fitted to another style costs perplexity on the base corpus')
  })

  test('llama.cpp loads the adapter and agrees with runner (log-probabilities and greedy tokens)', async (t) => {
    const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
    try {
      await compareWithLlamaCpp(llama, {
        label: 'stories260K + trained adapter',
        path: STORIES,
        text: readFileSync(VAL, 'utf8').slice(0, 400),
        lora: [{path: trained, scale: 1}],
        tol: 1e-3,
        meanTol: 1e-4,
        greedySteps: 24,
        report: (line) => t.diagnostic(line),
      })
    } finally {
      await llama.dispose()
    }
  })

  test('the same command gives the same adapter bytes for 1 and 2 threads', async () => {
    const [one, two] = [join(dir, 't1.gguf'), join(dir, 't2.gguf')]
    await Promise.all([
      train(one, '--steps', '6', '--threads', '1', '--dropout', '0.1'),
      train(two, '--steps', '6', '--threads', '2', '--dropout', '0.1'),
    ])
    assert.deepEqual(readFileSync(one), readFileSync(two))
  })

  test('a checkpoint resumes bit for bit, and a different setting is refused by name', async () => {
    const straight = join(dir, 'straight.gguf')
    const resumed = join(dir, 'resumed.gguf')
    const ckpt = join(dir, 'half.ckpt')
    await train(straight, '--steps', '12', '--grad-accum', '2')
    await train(join(dir, 'first-half.gguf'), '--steps', '12', '--grad-accum', '2', '--checkpoint-every', '6', '--checkpoint', ckpt)
    const other = await runCliAsync([...base(resumed, '--steps', '12', '--grad-accum', '2', '--lr', '1e-3', '--resume', ckpt)])
    assert.equal(other.status, 2, other.stderr)
    assert.match(other.stderr, /was made with lr = 0\.0002, this run has 0\.001: resume with the same settings/)
    const r = await train(resumed, '--steps', '12', '--grad-accum', '2', '--resume', ckpt)
    assert.equal(r.curve.length, 12, 'the curve carries the first half')
    assert.deepEqual(readFileSync(resumed), readFileSync(straight))
  })

  test('Ctrl+C saves a checkpoint and exits 130; --resume finishes with the same bytes as an uninterrupted run', async () => {
    const straight = join(dir, 'ctrl-straight.gguf')
    const out = join(dir, 'ctrl.gguf')
    const args = base(out, '--steps', '200', '--ctx', '16')
    const child = spawn(process.execPath, ['bin/run.js', ...args], {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1'}})
    let stderr = ''
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    await new Promise<void>((resolve, reject) => {
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d
        if (/step \d+\/200/.test(stderr)) resolve()
      })
      child.on('exit', () => reject(new Error(`exited before any step: ${stderr}`)))
    })
    child.kill('SIGINT')
    assert.equal(await exited, 130, stderr)
    assert.match(stderr, /interrupted at step \d+ of 200: saved the last finished step \(\d+\) to .*ctrl\.ckpt; continue with --resume/)
    assert.ok(!existsSync(out), 'no adapter is written')
    const [resumed] = await Promise.all([
      train(out, '--steps', '200', '--ctx', '16', '--resume', join(dir, 'ctrl.ckpt')),
      train(straight, '--steps', '200', '--ctx', '16'),
    ])
    assert.equal(resumed.steps, 200)
    assert.deepEqual(readFileSync(out), readFileSync(straight))
  })

  test('chat JSONL: only the assistant turns are scored, as ChatML lays them out', async () => {
    const file = join(dir, 'chat.jsonl')
    const conversation = {
      messages: [
        {role: 'system', content: 'Be brief.'},
        {role: 'user', content: 'Hello'},
        {role: 'assistant', content: 'Ahoy.'},
        {role: 'user', content: 'Weather?'},
        {role: 'assistant', content: 'Calm seas.'},
      ],
    }
    writeFileSync(file, `${JSON.stringify(conversation)}\n`)
    const model = await Model.load(STORIES)
    try {
      const data = await readTrainingData(file, model, {ctx: 256})
      const s = data.samples[0]!
      const scoredText = model.tokenizer.decode([...s.tokens].filter((_, i) => s.scored[i] === 1))
      // ChatML: each assistant turn is "content<|im_end|>\n" after "<|im_start|>assistant\n".
      assert.equal(scoredText, 'Ahoy.<|im_end|>\nCalm seas.<|im_end|>\n')
      const r = await train(join(dir, 'chat.gguf'), '--data', file, '--steps', '2', '--ctx', '256')
      assert.equal(r.steps, 2)
    } finally {
      model.dispose()
    }
  })

  test('refused by name before any training', async () => {
    const badJsonl = join(dir, 'bad.jsonl')
    writeFileSync(
      badJsonl,
      '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n{"messages": oops}\n',
    )
    const exists = join(dir, 'exists.gguf')
    writeFileSync(exists, 'x')
    const cases: Array<[string[], number, RegExp]> = [
      [base(join(dir, 'x.gguf'), '--targets', 'q_proj,wq'), 2, /--targets: unknown weight "wq"/],
      [
        ['train-lora', '-m', sharedPath('fixtures', 'phi3.gguf'), '--data', TRAIN, '--out', join(dir, 'x.gguf'), '--targets', 'q_proj'],
        2,
        /the model fuses attn_q into attn_qkv \(its rows are q, k and v\): target attn_qkv \(PEFT: qkv_proj\)/,
      ],
      [base(join(dir, 'x.gguf'), '--data', badJsonl), 2, /bad\.jsonl: line 2 is not JSON/],
      [base(join(dir, 'x.gguf'), '--alpha', '0'), 2, /--alpha 0 must be a number above 0/],
      [base(join(dir, 'x.gguf'), '--seed', '-1'), 2, /--seed -1 must be an integer/],
      [base(exists), 2, /exists\.gguf already exists; pass --force/],
    ]
    for (const [args, exit, message] of cases) {
      const r = await runCliAsync(args)
      assert.equal(r.status, exit, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
    }
  })
})

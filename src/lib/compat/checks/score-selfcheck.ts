/**
 * `score_selfcheck`: `runner score`'s corpus scoring (src/lib/score scoreCorpus, llama-perplexity's
 * window scheme, F32 KV cache) held to its own bounds: a finite perplexity >= 1, nll_mean = log(ppl)
 * and = the windows' NLL sums over the scored count (1e-9 relative), the scored count the scheme's,
 * the corpus tokens the tokenizer's; and, when the row's llama.cpp reference holds a perplexity for
 * this corpus and window, llama.cpp's token ids and perplexity (within pplTolerance).
 */
import {existsSync, readFileSync} from 'node:fs'
import {dirname, join, resolve} from 'node:path'

import {findPackageRoot} from '../../engine/index.js'
import {RunnerError} from '../../errors.js'
import {readGgufModel} from '../../gguf/index.js'
import {checkModel} from '../../model-check/index.js'
import {scoreCorpus} from '../../score/index.js'
import {sha256Text} from '../../util/index.js'
import {type CheckClass, fail, numberParam, pass, type RosterRow, stringParam} from '../types.js'

const CORPUS_NAME = 'corpus-stories.txt'
const DEFAULT_CTX = 128

/** Used when no corpus file is found: about 300 tokens in stories260K's vocabulary (two windows of 128). */
export const BUILT_IN_CORPUS = [
  'Once upon a time, in a small town near the sea, there lived a boy named Sam. Sam had a little dog called Max, and every morning they walked',
  'down to the beach together. Max liked to run after the waves and bark at the birds. Sam liked to look for shells and pretty stones in the sand.',
  'One day, Sam found a big shell that was pink and white. He held it up to his ear and heard the sound of the sea. "Listen, Max!" he said.',
  'Max tilted his head and wagged his tail. Then a big wave came and splashed them both. Sam laughed and Max shook the water from his fur.',
  'They ran home, wet and happy, and Sam put the shell on the table by his bed. His mom smiled and said it was the best shell she had ever seen.',
  'That night, Sam fell asleep holding the shell, and he dreamed of the sea, the birds and his little dog Max running on the warm sand.',
].join(' ')

interface ReferencePerplexity {
  readonly corpus_sha256: string
  readonly scheme: {readonly n_ctx: number}
  readonly perplexity: number
  readonly token_ids?: readonly number[]
}

/** The default corpus: beside the row's reference, else ../shared/reference/ next to the package. */
function defaultCorpus(row: RosterRow): string | undefined {
  const candidates = [row.reference === undefined ? undefined : join(dirname(row.reference), CORPUS_NAME)]
  try {
    candidates.push(resolve(findPackageRoot(), '..', 'shared', 'reference', CORPUS_NAME))
  } catch {
    // Not inside the package (bundled): the built-in paragraph.
  }
  return candidates.find((c): c is string => c !== undefined && existsSync(c))
}

function referencePerplexity(row: RosterRow): ReferencePerplexity | undefined {
  if (row.reference === undefined) return undefined
  if (!existsSync(row.reference)) throw new Error(`the roster's reference ${row.reference} does not exist`)
  // Only stories260K and its quantized variants record one; the others hold null.
  return (JSON.parse(readFileSync(row.reference, 'utf8')) as {perplexity?: ReferencePerplexity | null}).perplexity ?? undefined
}

/** Relative tolerance on the perplexity against llama.cpp's: as test/commands/score.test.ts, by weight type. */
function defaultPplTolerance(row: RosterRow): number {
  const type = row.type.toUpperCase()
  return type === 'F32' || type === 'F16' ? 1e-3 : 0.02
}

const close = (a: number, b: number, rel: number) => Math.abs(a - b) <= rel * Math.abs(b)

export const scoreSelfcheck: CheckClass = {
  name: 'score_selfcheck',
  summary:
    "the score command's corpus perplexity keeps its own bounds (finite, >= 1, nll_mean = log ppl, counts as the tokenizer's) and matches llama-perplexity's recorded figure when the reference has one",
  params: {
    corpus: {
      type: 'string',
      description: `the text file to score, absolute or relative to the current directory (default: ${CORPUS_NAME} beside the row's reference or in ../shared/reference, else a built-in paragraph)`,
    },
    ctx: {type: 'integer', minimum: 4, description: `window size (default ${DEFAULT_CTX}, at most the model's training context)`},
    pplTolerance: {
      type: 'number',
      description: "largest relative |Δ perplexity| against the reference's (default by weight type: F32/F16 1e-3, others 0.02)",
    },
  },
  async when() {
    return undefined
  },
  async run(row, params, env) {
    const given = params.corpus === undefined ? undefined : resolve(stringParam(params, 'corpus', ''))
    if (given !== undefined && !existsSync(given)) return fail(`the corpus ${given} does not exist`)
    const corpusFile = given ?? defaultCorpus(row)
    const corpus = corpusFile === undefined ? BUILT_IN_CORPUS : readFileSync(corpusFile, 'utf8')
    const corpusName = corpusFile ?? 'the built-in paragraph'
    const pplTolerance = numberParam(params, 'pplTolerance', defaultPplTolerance(row))
    const {plan, tokenizer} = checkModel(readGgufModel(row.path))
    const asked = numberParam(params, 'ctx', DEFAULT_CTX)
    if (params.ctx !== undefined && asked > plan.config.nCtxTrain)
      throw new TypeError(`parameter ctx ${asked} is above the model's training context ${plan.config.nCtxTrain}`)
    const ctx = Math.min(asked, plan.config.nCtxTrain) // the default, on a model trained shorter
    if (!Number.isInteger(ctx) || ctx < 4) throw new TypeError(`parameter ctx must be an integer >= 4, got ${ctx}`)

    let doc
    try {
      doc = await scoreCorpus({
        modelPath: row.path,
        corpus,
        corpusFile: corpusFile ?? null,
        ctx,
        threads: env.threads,
        nBatch: ctx,
        kvType: 'f32',
        saveTopK: 0,
        signal: env.signal,
      })
    } catch (error) {
      // The scorer's own contradiction checks (SCORE_SELF_CHECK: p > 0.5 not the argmax, a non-finite
      // log p) and its refusals (a corpus shorter than one window...); an interruption stays one.
      if (error instanceof RunnerError && !env.signal.aborted) return fail(`score refused: ${error.code}: ${error.message}`)
      throw error
    }
    const figures = {perplexity: {value: doc.ppl, better: 'lower' as const, tolerance: 0.01}}
    const bad = (what: string) => fail(`${what} (${corpusName}, ctx ${ctx})`, figures)

    if (!Number.isFinite(doc.ppl) || !(doc.ppl >= 1)) return bad(`perplexity ${doc.ppl} is not a finite number >= 1`)
    if (!close(doc.nll_mean, Math.log(doc.ppl), 1e-9)) return bad(`nll_mean ${doc.nll_mean} but log(ppl) ${Math.log(doc.ppl)}`)
    const tokens = tokenizer.encode(corpus, {addSpecial: true})
    if (doc.corpus.tokens !== tokens.length)
      return bad(`scored a corpus of ${doc.corpus.tokens} tokens; the tokenizer gives ${tokens.length}`)
    const expectScored = doc.scheme.windows * doc.scheme.scoredPerWindow
    if (doc.n_scored !== expectScored)
      return bad(`${doc.n_scored} tokens scored; ${doc.scheme.windows} windows of ${doc.scheme.scoredPerWindow} make ${expectScored}`)
    const sum = doc.windows.reduce((s, w) => s + w.nllSum, 0)
    if (!close(sum / doc.n_scored, doc.nll_mean, 1e-9))
      return bad(`the windows' NLL sums give a mean of ${sum / doc.n_scored}, nll_mean is ${doc.nll_mean}`)
    const own = `perplexity ${doc.ppl.toFixed(4)} (nll_mean ${doc.nll_mean.toFixed(5)} = log ppl), ${doc.n_scored} tokens scored of ${tokens.length} in ${doc.scheme.windows} windows of ${ctx}`

    const ref = referencePerplexity(row)
    let against = 'no llama.cpp perplexity for this model'
    if (ref !== undefined) {
      if (ref.corpus_sha256 !== sha256Text(corpus) || ref.scheme.n_ctx !== ctx) {
        against = `llama.cpp's perplexity is for another corpus or window (ctx ${ref.scheme.n_ctx}): not compared`
      } else {
        if (ref.token_ids !== undefined && ref.token_ids.join() !== tokens.join()) {
          let i = 0
          while (ref.token_ids[i] === tokens[i]) i++
          return bad(`corpus token ${i}: ours ${tokens[i] ?? 'end'}, llama.cpp ${ref.token_ids[i] ?? 'end'}`)
        }
        const rel = Math.abs(doc.ppl / ref.perplexity - 1)
        const line = `llama.cpp ${ref.perplexity.toFixed(4)}, relative |Δ| ${rel.toExponential(2)} (bound ${pplTolerance})`
        if (!(rel <= pplTolerance)) return bad(`${own}; ${line}`)
        against = `${line}, same ${tokens.length} token ids`
      }
    }
    return pass(`${own} (${corpusName}); ${against}`, figures)
  },
}

import {Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/runner-command.js'
import {Model} from '../lib/engine/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {type BasePosition, checkBaseMatches, readBaseLogits, scoreTokens, summarizeKld, writeBaseLogits} from '../lib/score/index.js'
import {basePosition, KLD_MARGIN, positionKld} from '../lib/score/kld.js'
import {formatRows} from '../lib/util/format.js'
import {readPrompt} from '../lib/util/prompt-input.js'
import {sha256File, sha256Text} from '../lib/util/sha256.js'

export default class Score extends RunnerCommand {
  static override summary = 'Score a corpus: teacher-forced NLL, perplexity and top-1 accuracy.'
  static override description =
    "Tokenizes the corpus, evaluates it in windows of --ctx tokens and scores the second half of each window, exactly as " +
    "llama.cpp's perplexity tool does (docs/score.md). Probabilities are full-vocabulary log-softmax in double precision, and " +
    'every position is checked against two facts of probability (p > 0.5 implies argmax; the argmax has p >= 1/n_vocab): a ' +
    'contradiction refuses the result (exit 4). The numbers are the same, bit for bit, for any --threads and --batch-size.'

  static override examples = [
    {description: "Perplexity of stories260K on the shared corpus, llama.cpp's scheme", command: '<%= config.bin %> score -m ../shared/models/stories260K.gguf --file ../shared/reference/corpus-stories.txt --ctx 128'},
    {description: 'One JSON document for a script', command: '<%= config.bin %> score -m model.gguf --file corpus.txt --json'},
    {description: 'Corpus from standard input', command: 'cat corpus.txt | <%= config.bin %> score -m model.gguf --ctx 256'},
    {description: 'KL-divergence of a quantization against its parent', command: '<%= config.bin %> score -m model-f16.gguf --file corpus.txt --save-logits base.bin && <%= config.bin %> score -m model-q4_0.gguf --file corpus.txt --kld base.bin'},
  ]

  static override flags = {
    model: Flags.string({char: 'm', description: 'GGUF model file', required: true, helpValue: 'FILE'}),
    file: Flags.string({char: 'f', description: 'corpus file (default: standard input)', helpValue: 'FILE'}),
    ctx: Flags.integer({description: 'window size in tokens; the second half of each window is scored', default: 512, min: 4}),
    stride: Flags.integer({description: 'tokens between window starts (default: --ctx, no overlap)', min: 1}),
    threads: Flags.integer({char: 't', description: 'threads (default: physical cores, at most 32)', min: 1, max: 256}),
    'batch-size': Flags.integer({char: 'b', description: 'tokens per forward step', default: 512, min: 1}),
    'kv-type': Flags.string({description: 'KV cache type (llama.cpp\'s reference figures used f32)', options: ['f16', 'f32'], default: 'f16'}),
    'save-logits': Flags.string({description: "save this model's per-position distributions (top-k + the rest) for a later --kld", helpValue: 'FILE', exclusive: ['kld']}),
    'save-top-k': Flags.integer({description: 'tokens kept per position by --save-logits', default: 32, min: 2, max: 1024}),
    kld: Flags.string({description: 'report KL-divergence and top-1 agreement against a base saved with --save-logits', helpValue: 'FILE'}),
    json: Flags.boolean({description: 'print one JSON document'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Score)
    const corpus = await readPrompt(undefined, flags.file)
    if (corpus.length === 0) throw new RunnerError('SCORE_EMPTY_CORPUS', 'the corpus is empty', ExitCode.usage)
    const model = await Model.load(flags.model)
    const tok = model.tokenizer
    const tokens = tok.encode(corpus, {addSpecial: true, parseSpecial: false})
    if (flags.ctx > model.config.nCtxTrain) {
      throw new RunnerError('SCORE_CTX_TOO_LARGE', `--ctx ${flags.ctx} is larger than the model's context of ${model.config.nCtxTrain}`, ExitCode.usage)
    }
    const ctx = await model.createContext({nCtx: flags.ctx, nBatch: Math.min(flags['batch-size'], flags.ctx), threads: flags.threads, kvType: flags['kv-type'] as 'f16' | 'f32'})
    const corpusSha = sha256Text(corpus)
    const base = flags.kld === undefined ? undefined : await readBaseLogits(flags.kld)
    const stride = flags.stride ?? flags.ctx
    if (base) checkBaseMatches(base, tokens, {ctx: flags.ctx, stride, first: Math.floor(flags.ctx / 2)}, corpusSha, flags.kld!)
    const saved: BasePosition[] = []
    const klds: number[] = []
    const agree: boolean[] = []
    const onPosition = (row: Float32Array, lse: number, target: number, argmax: number) => {
      if (flags['save-logits'] !== undefined) saved.push(basePosition(row, lse, target, Math.min(flags['save-top-k'], row.length)))
      if (base) {
        const b = base.positions[klds.length]!
        if (b.target !== target) throw new RunnerError('KLD_BASE_MISMATCH', `${flags.kld}: position ${klds.length} scores another token`, ExitCode.usage)
        klds.push(positionKld(b, row, lse))
        agree.push(argmax === b.tokens[0])
      }
    }
    const abort = new AbortController()
    const onSigint = () => abort.abort()
    process.once('SIGINT', onSigint)
    const started = performance.now()
    let result
    try {
      result = await scoreTokens(ctx, tokens, {
        ctx: flags.ctx,
        stride: flags.stride,
        bos: tok.addBos ? tok.bos : undefined,
        signal: abort.signal,
        onPosition,
        onProgress: (done, total) => {
          if (!flags.json && process.stderr.isTTY && performance.now() - started > 1000) {
            process.stderr.write(`\rscoring window ${done}/${total}${done === total ? '\n' : ''}`)
          }
        },
      })
    } finally {
      process.removeListener('SIGINT', onSigint)
    }
    const modelSha = await sha256File(model.gguf.path)
    const doc = {
      model: {file: flags.model, sha256: modelSha, shards: model.gguf.shards.length},
      corpus: {file: flags.file ?? null, sha256: corpusSha, tokens: tokens.length},
      scheme: {
        description: "llama-perplexity: tokens = [BOS] + tokenize(corpus); window c = tokens[c*stride, c*stride + ctx) with its first token replaced by BOS, from an empty cache; logits at first..ctx-2 score tokens first+1..ctx-1, first = floor(ctx/2)",
        ctx: flags.ctx,
        stride: result.scheme.stride,
        first: result.scheme.first,
        windows: result.scheme.starts.length,
        scoredPerWindow: result.scheme.scoredPerWindow,
        bosReplacesFirst: tok.addBos,
      },
      n_scored: result.nScored,
      nll_mean: result.nllMean,
      nll_std: result.nllStd,
      nll_std_error: result.nllStdError,
      ppl: result.ppl,
      ppl_ci95: result.pplCi95,
      n_vocab: result.nVocab,
      top1: result.top1,
      top1_rate: result.top1Rate,
      windows: result.windows,
      timings: {
        ms: Math.round(result.ms * 10) / 10,
        tokensPerSecond: Math.round((result.scheme.starts.length * flags.ctx * 1000) / result.ms),
        scoredPerSecond: Math.round((result.nScored * 1000) / result.ms),
      },
      kvType: flags['kv-type'],
      ...(base ? {kld: kldDoc(summarizeKld(klds, agree, base), result.ppl)} : {}),
    }
    if (flags['save-logits'] !== undefined) {
      await writeBaseLogits(flags['save-logits'], {
        k: Math.min(flags['save-top-k'], result.nVocab),
        nVocab: result.nVocab,
        ctx: flags.ctx,
        stride,
        first: result.scheme.first,
        corpusSha256: corpusSha,
        tokens: Int32Array.from(tokens),
        positions: saved,
      })
    }
    ctx.dispose()
    model.dispose()
    if (flags.json) {
      this.log(JSON.stringify(doc, null, 2))
      return
    }
    this.log(
      formatRows([
        ['tokens scored', `${doc.n_scored} in ${doc.scheme.windows} windows of ${doc.scheme.ctx} (stride ${doc.scheme.stride})`],
        ['nll mean', `${doc.nll_mean.toFixed(6)} ± ${doc.nll_std_error.toFixed(6)} (std ${doc.nll_std.toFixed(4)})`],
        ['perplexity', `${doc.ppl.toFixed(4)} (95%: ${doc.ppl_ci95[0].toFixed(4)} to ${doc.ppl_ci95[1].toFixed(4)})`],
        ['top-1', `${doc.top1} of ${doc.n_scored} (${(100 * doc.top1_rate).toFixed(2)}%)`],
        ['speed', `${doc.timings.scoredPerSecond} tokens/s scored (${doc.timings.tokensPerSecond} tokens/s evaluated, ${doc.timings.ms} ms)`],
        ...(doc.kld
          ? ([
              ['KLD vs base', `mean ${doc.kld.mean.toFixed(6)}, median ${doc.kld.median.toFixed(6)}, p99 ${doc.kld.p99.toFixed(6)}, max ${doc.kld.max.toFixed(6)}`],
              ['top-1 agreement', `${(100 * doc.kld.top1_agreement).toFixed(2)}% (${(100 * doc.kld.top1_agreement_margin).toFixed(2)}% where the base leads by > ${doc.kld.margin} nats, ${doc.kld.margin_positions} positions)`],
              ['ppl ratio', `${doc.kld.ppl_ratio.toFixed(6)} (base ppl ${doc.kld.base_ppl.toFixed(4)})`],
            ] as Array<[string, string]>)
          : []),
        ['model sha256', modelSha],
        ['corpus sha256', doc.corpus.sha256],
      ]),
    )
  }
}

function kldDoc(k: ReturnType<typeof summarizeKld>, ppl: number) {
  return {
    mean: k.mean,
    median: k.median,
    p99: k.p99,
    max: k.max,
    top1_agreement: k.top1Agreement,
    top1_agreement_margin: k.top1AgreementMargin,
    margin: KLD_MARGIN,
    margin_positions: k.marginPositions,
    base_ppl: k.basePpl,
    ppl_ratio: ppl / k.basePpl,
  }
}

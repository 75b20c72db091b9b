import {Flags} from '@oclif/core'

import {loraFlag, loraFromFlags, noGpuFlag, refuseGpuLayers, RunnerCommand, warnLine, withInterrupt} from '../lib/cli/index.js'
import {ropeFlags, ropeFromFlags, signatureFlags, signaturePolicyFromFlags} from '../lib/cli/index.js'
import {MAX_BATCH_SIZE, MAX_CONTEXT_SIZE} from '../lib/engine/index.js'
import {ExitCode} from '../lib/errors.js'
import {formatScoreReport, scoreCorpus, scoreProgress} from '../lib/score/index.js'
import {readPrompt} from '../lib/util/index.js'

export default class Score extends RunnerCommand {
  static override summary = 'Score a corpus: teacher-forced NLL, perplexity and top-1 accuracy.'
  static override description =
    'Tokenizes the corpus, evaluates it in windows of --ctx tokens and scores the second half of each window, exactly as ' +
    "llama.cpp's perplexity tool does (docs/score.md). Probabilities are full-vocabulary log-softmax in double precision, and " +
    'every position is checked against two facts of probability (p > 0.5 implies argmax; the argmax has p >= 1/n_vocab): a ' +
    'contradiction refuses the result (exit 4). The numbers are the same, bit for bit, for any --threads and --batch-size. ' +
    'While it scores, stderr shows the time per window, an ETA and the running perplexity after each window, as ' +
    'llama-perplexity does; Ctrl+C prints the report of the windows scored so far, marked partial, and exits 130.'

  static override examples = [
    {
      description: "Perplexity of stories260K on the shared corpus, llama.cpp's scheme",
      command: '<%= config.bin %> score -m ../shared/models/stories260K.gguf --file ../shared/reference/corpus-stories.txt --ctx 128',
    },
    {description: 'One JSON document for a script', command: '<%= config.bin %> score -m model.gguf --file corpus.txt --json'},
    {description: 'Corpus from standard input', command: 'cat corpus.txt | <%= config.bin %> score -m model.gguf --ctx 256'},
    {
      description: 'KL-divergence of a quantization against its parent',
      command:
        '<%= config.bin %> score -m model-f16.gguf --file corpus.txt --save-logits base.bin && <%= config.bin %> score -m model-q4_0.gguf --file corpus.txt --kld base.bin',
    },
    {
      description: 'Score only a model whose signature verifies',
      command: '<%= config.bin %> score -m model.gguf --model-sig model.gguf.sig --model-pubkey signer.pub.pem --file corpus.txt',
    },
  ]

  static override flags = {
    model: Flags.string({char: 'm', description: 'GGUF model file', required: true, helpValue: 'FILE'}),
    file: Flags.string({char: 'f', description: 'corpus file (default: standard input)', helpValue: 'FILE'}),
    'ctx-size': Flags.integer({
      char: 'c',
      aliases: ['ctx'],
      description:
        "window size in tokens; the second half of each window is scored (default 512, at most the model's training context; beyond it runs with a warning)",
      min: 4,
      max: MAX_CONTEXT_SIZE,
    }),
    ...noGpuFlag,
    stride: Flags.integer({description: 'tokens between window starts (default: --ctx, no overlap)', min: 1}),
    threads: Flags.integer({char: 't', description: 'threads (default: physical cores, at most 32)', min: 1, max: 256}),
    'batch-size': Flags.integer({char: 'b', description: 'tokens per forward step', default: 512, min: 1, max: MAX_BATCH_SIZE}),
    'kv-type': Flags.string({
      description: "KV cache type (llama.cpp's reference figures used f32)",
      options: ['f16', 'f32'],
      default: 'f16',
    }),
    'save-logits': Flags.string({
      description: "save this model's per-position distributions (top-k + the rest) for a later --kld",
      helpValue: 'FILE',
      exclusive: ['kld'],
    }),
    'save-top-k': Flags.integer({description: 'tokens kept per position by --save-logits', default: 32, min: 2, max: 1024}),
    kld: Flags.string({description: 'report KL-divergence and top-1 agreement against a base saved with --save-logits', helpValue: 'FILE'}),
    ...loraFlag,
    ...ropeFlags,
    ...signatureFlags,
    json: Flags.boolean({description: 'print one JSON document'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Score)
    refuseGpuLayers(flags['n-gpu-layers'])
    const corpus = await readPrompt(undefined, flags.file, {noun: 'corpus', flags: '--file FILE'})
    const doc = await withInterrupt((signal) =>
      scoreCorpus({
        modelPath: flags.model,
        lora: loraFromFlags(flags.lora),
        rope: ropeFromFlags(flags),
        signature: signaturePolicyFromFlags(flags),
        corpus,
        corpusFile: flags.file ?? null,
        ctx: flags['ctx-size'],
        stride: flags.stride,
        threads: flags.threads,
        nBatch: flags['batch-size'],
        kvType: flags['kv-type'] as 'f16' | 'f32',
        saveLogits: flags['save-logits'],
        saveTopK: flags['save-top-k'],
        kld: flags.kld,
        signal,
        keepPartial: true,
        progress: scoreProgress(),
        onWarning: warnLine,
      }),
    )
    this.log(flags.json ? JSON.stringify(doc, null, 2) : formatScoreReport(doc))
    if (doc.partial) this.exit(ExitCode.interrupted)
  }
}

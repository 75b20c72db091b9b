import {Flags} from '@oclif/core'

import {
  contextFlags,
  contextFromFlags,
  loadProgress,
  loraFlag,
  loraFromFlags,
  modelFlag,
  RunnerCommand,
  signatureFlags,
  signaturePolicyFromFlags,
  withInterrupt,
} from '../lib/cli/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {embedWithModel, formatVectors, type Pooling, POOLINGS, readInputLines} from '../lib/embed/index.js'

export default class Embed extends RunnerCommand {
  static override summary = 'Embed texts: one pooled, unit-length vector per input.'
  static override description =
    "Each input is tokenized (BOS and EOS as the model's vocabulary asks), evaluated as a fresh sequence, and its tokens' " +
    'hidden states after the output norm are pooled into one vector of n_embd floats, then scaled to unit length, as ' +
    "llama.cpp's OpenAI-compatible endpoint computes them (docs/cli.md). The pooling is the model's own " +
    '(<arch>.pooling_type) unless --pooling names one; a model that declares none is mean-pooled. The vectors are the same, ' +
    'bit for bit, for any --threads and --batch-size, and equal what POST /v1/embeddings returns.'

  static override examples = [
    {
      description: 'One vector, printed as one line of numbers',
      command: '<%= config.bin %> embed -m ../shared/models/stories260K.gguf -p "Once upon a time"',
    },
    {
      description: 'Several inputs as one JSON array of vectors',
      command: '<%= config.bin %> embed -m model.gguf -p "a cat" -p "a dog" --json',
    },
    {
      description: 'One input per line of a file, last-token pooling',
      command: '<%= config.bin %> embed -m model.gguf --file lines.txt --pooling last',
    },
    {
      description: 'Raw pooled states, not scaled to unit length',
      command: '<%= config.bin %> embed -m model.gguf -p "hello" --no-normalize',
    },
    {
      description: 'Embed with a model whose signature verifies',
      command: '<%= config.bin %> embed -m model.gguf --model-sig model.gguf.sig --model-pubkey signer.pub.pem -p "hello"',
    },
  ]

  static override flags = {
    ...modelFlag,
    prompt: Flags.string({char: 'p', description: 'an input text (repeatable: one vector each)', multiple: true, helpValue: 'TEXT'}),
    file: Flags.string({char: 'f', description: 'inputs, one per line', helpValue: 'FILE', exclusive: ['prompt']}),
    pooling: Flags.string({
      description: "how token states become one vector (default: the model's own, else mean)",
      options: [...POOLINGS],
    }),
    normalize: Flags.boolean({description: 'scale each vector to unit Euclidean length', default: true, allowNo: true}),
    json: Flags.boolean({description: 'print one JSON array of vectors'}),
    ...contextFlags,
    ...loraFlag,
    ...signatureFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Embed)
    const inputs = flags.file !== undefined ? await readInputLines(flags.file) : (flags.prompt ?? [])
    if (inputs.length === 0) {
      const why = flags.file !== undefined ? `${flags.file} has no lines` : 'no input'
      throw new RunnerError('EMBED_NO_INPUT', `${why}: give --prompt TEXT (repeatable) or --file FILE (one input per line)`, ExitCode.usage)
    }
    const result = await withInterrupt((signal) =>
      embedWithModel({
        modelPath: flags.model,
        inputs,
        ...(flags.pooling ? {pooling: flags.pooling as Pooling} : {}),
        normalize: flags.normalize,
        ...contextFromFlags(flags),
        lora: loraFromFlags(flags.lora),
        signature: signaturePolicyFromFlags(flags),
        onProgress: loadProgress(!flags.json),
        signal,
      }),
    )
    this.log(formatVectors(result, flags.json))
  }
}

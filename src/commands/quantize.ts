import {Args, Flags} from '@oclif/core'

import {
  keepIfStillSigned,
  loraFromFlags,
  modelInputArg,
  RunnerCommand,
  signatureFlags,
  signaturePolicyFromFlags,
  withInterrupt,
} from '../lib/cli/index.js'
import {verifySignatureBeforeLoad} from '../lib/engine/index.js'
import {
  formatQuantizeSummary,
  QUANTIZE_EXAMPLES,
  QUANTIZE_MIXES,
  QUANTIZE_TYPES,
  quantizeFile,
  quantizeJson,
} from '../lib/quantize/index.js'

export default class Quantize extends RunnerCommand {
  static override summary = 'Convert a GGUF model to a smaller weight type.'
  static override description =
    "Quantizes the weight matrices with llama.cpp's reference quantizers (the same input gives the same bytes as " +
    "llama.cpp's llama-quantize without an importance matrix). --type is a tensor type or one of llama.cpp's named mixes " +
    "(Q4_K_M, ...): without --pure each tensor gets the type llama.cpp's rules give it; with --pure every weight matrix gets " +
    'the one type. All metadata is carried over, general.file_type and a runner.quantize.* record are set, and the output ' +
    'is written to a temporary file, fsynced and renamed: a killed run leaves no partial file under the real name, and Ctrl+C ' +
    'removes the partial file and exits 130. An existing output is replaced only with --force. The input is never modified. ' +
    'Tensor types: ' +
    QUANTIZE_TYPES.join(', ') +
    '. See docs/quantize.md.'

  static override examples = QUANTIZE_EXAMPLES

  static override args = {
    input: modelInputArg('GGUF model to read (F32, F16 or BF16 weights; any shard of a split set)'),
    output: Args.string({description: 'GGUF file to write (never the input)', required: true}),
  }

  static override flags = {
    type: Flags.string({
      description: `tensor type or llama.cpp mix (${Object.keys(QUANTIZE_MIXES).join(', ')})`,
      required: true,
      helpValue: 'TYPE',
    }),
    pure: Flags.boolean({description: "one type for every weight matrix (llama.cpp's --pure) instead of the mix"}),
    'keep-output': Flags.boolean({description: 'leave output.weight in its current type'}),
    'remove-sublayer': Flags.string({
      description: 'also remove sublayers, as runner remove-sublayer does (attn:N,mlp:M)',
      helpValue: 'SPEC',
    }),
    'merge-lora': Flags.string({
      description:
        "merge a LoRA adapter (llama.cpp's GGUF format) into its weights first, W + scale * alpha/rank * B A in F32; repeatable, in order (docs/lora.md)",
      multiple: true,
      helpValue: 'FILE[:SCALE]',
    }),
    'type-plan': Flags.string({
      description: 'JSON {"rules": [{"pattern": REGEX, "type": TYPE}]}: per-tensor types, first match wins',
      helpValue: 'FILE',
    }),
    threads: Flags.integer({
      char: 't',
      description: 'worker threads converting tensors (default: physical cores); the bytes are the same for any count',
      min: 1,
      max: 256,
    }),
    force: Flags.boolean({description: 'replace the output file if it exists (without it, an existing file is refused)'}),
    json: Flags.boolean({description: 'print one JSON summary on stdout (no progress line on stderr)'}),
    ...signatureFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Quantize)
    // The input's signature before anything of it is read (docs/model-signing.md); the output is
    // kept only if the input is still the file that was checked once it has been read.
    const signed = await verifySignatureBeforeLoad(args.input, signaturePolicyFromFlags(flags))
    const result = await withInterrupt((signal) =>
      quantizeFile({
        input: args.input,
        output: args.output,
        type: flags.type,
        pure: Boolean(flags.pure),
        keepOutput: Boolean(flags['keep-output']),
        typePlanFile: flags['type-plan'],
        removeSublayer: flags['remove-sublayer'],
        mergeLora: loraFromFlags(flags['merge-lora'], '--merge-lora'),
        threads: flags.threads,
        silent: flags.json,
        force: flags.force,
        signal,
      }),
    )
    if (signed) await keepIfStillSigned(signed, args.output)
    if (flags.json) this.log(JSON.stringify(quantizeJson(result, flags.type)))
    else process.stderr.write(`${formatQuantizeSummary(result.summary, result.merged)}\n`)
  }
}

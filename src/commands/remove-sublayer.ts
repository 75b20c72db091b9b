import {Args, Flags} from '@oclif/core'

import {keepIfStillSigned, modelInputArg, RunnerCommand, signatureFlags, signaturePolicyFromFlags, withInterrupt} from '../lib/cli/index.js'
import {verifySignatureBeforeLoad} from '../lib/engine/index.js'
import {readGgufModel} from '../lib/gguf/index.js'
import {parseRemovals, removeSublayers} from '../lib/quantize/index.js'
import {formatBytes, formatRows} from '../lib/util/index.js'

export default class RemoveSublayer extends RunnerCommand {
  static override summary = "Physically remove blocks' attention or FFN sublayers from a GGUF model."
  static override description =
    "Drops block N's attention tensors (attn:N: q, k, v, output and their biases) or FFN tensors (mlp:N: gate, up, down), " +
    'keeps the block\'s pre-norm, and declares the absence as llama.cpp\'s "deci" models do: 0 at that block in the per-block ' +
    'head_count / head_count_kv or feed_forward_length arrays. The engine then skips the branch and reserves no KV cache for a ' +
    'removed attention. The output is written atomically (Ctrl+C removes the partial file and exits 130); an existing output is ' +
    'replaced only with --force; the input is never modified. See docs/sublayer-removal.md.'

  static override examples = [
    {
      description: 'Remove the attention of block 2 and the FFN of block 1',
      command: '<%= config.bin %> remove-sublayer ../shared/models/stories260K.gguf /tmp/cut.gguf attn:2,mlp:1',
    },
    {
      description: 'Write over an earlier cut',
      command: '<%= config.bin %> remove-sublayer ../shared/models/stories260K.gguf /tmp/cut.gguf attn:3 --force',
    },
    {description: 'What it costs, measured', command: '<%= config.bin %> score -m /tmp/cut.gguf --file corpus.txt --kld base.bin'},
    {
      description: 'The same, from an input whose signature verifies',
      command: '<%= config.bin %> remove-sublayer model.gguf /tmp/cut.gguf attn:2 --model-sig model.gguf.sig --model-pubkey signer.pub.pem',
    },
  ]

  static override args = {
    input: modelInputArg('GGUF model'),
    output: Args.string({description: 'GGUF file to write', required: true}),
    sublayers: Args.string({description: 'comma-separated attn:N and mlp:N (N: block index)', required: true}),
  }

  static override flags = {
    force: Flags.boolean({description: 'replace the output file if it exists (without it, an existing file is refused)'}),
    json: Flags.boolean({description: 'print one JSON summary'}),
    ...signatureFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(RemoveSublayer)
    const removals = parseRemovals(args.sublayers)
    // The input's signature before its header is read (docs/model-signing.md).
    const signed = await verifySignatureBeforeLoad(args.input, signaturePolicyFromFlags(flags))
    const model = readGgufModel(args.input)
    const summary = await withInterrupt((signal) => removeSublayers(model, args.output, removals, {exclusive: !flags.force, signal}))
    if (signed) await keepIfStillSigned(signed, args.output)
    if (flags.json) {
      this.log(JSON.stringify(summary))
      return
    }
    this.log(
      formatRows([
        ['removed', args.sublayers],
        [
          'tensors dropped',
          `${summary.droppedTensors.length} (${formatBytes(summary.droppedBytes)}): ${summary.droppedTensors.join(', ')}`,
        ],
        ['file', `${summary.output}, ${formatBytes(summary.fileBytes)}`],
      ]),
    )
  }
}

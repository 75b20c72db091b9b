import {Flags} from '@oclif/core'

import {modelInputArg, RunnerCommand} from '../lib/cli/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {
  modelToJson,
  readGgufModel,
  renderMetadata,
  renderSummary,
  renderTensors,
  renderValue,
  summarizeModel,
  valueToJson,
  valueTypeName,
} from '../lib/gguf/index.js'
import {defaultKvFigures, describeKv} from '../lib/engine/index.js'
import {loadVerdict, renderVerdict, verdictJson} from '../lib/model-check/index.js'
import {printableJson, quoted} from '../lib/util/index.js'

export default class Inspect extends RunnerCommand {
  static override summary = 'Show what a GGUF model file holds: architecture, sizes, tokenizer, tensors.'
  static override description =
    'Reads only the header (metadata and tensor table), so it is instant on a file of any size. A sharded set ' +
    '(name-00001-of-00003.gguf) is read as one model from any of its shards. A malformed or hostile file is refused ' +
    'with the field and byte offset that are wrong, and the command exits 3 (invalid model). A file that parses is shown, ' +
    'then checked as run loads it (architecture, hyperparameters, tensors, tokenizer): "loads: yes", or "loads: no" and ' +
    'why; with --check a model that would not load exits 3. Strings from the file are printed with control and ' +
    'format characters escaped.'

  static override examples = [
    {description: 'Summary of a model', command: '<%= config.bin %> inspect ../shared/models/stories260K.gguf'},
    {description: 'Every tensor with its type, shape, offset and size', command: '<%= config.bin %> inspect model.gguf --tensors'},
    {description: 'One metadata value', command: '<%= config.bin %> inspect model.gguf --key llama.context_length'},
    {description: 'Everything as one JSON document', command: "<%= config.bin %> inspect model.gguf --json | jq '.summary'"},
    {description: 'Exit 3 unless run would load the model', command: '<%= config.bin %> inspect model.gguf --check'},
  ]

  static override args = {
    file: modelInputArg('GGUF file (or any shard of a split model)'),
  }

  static override flags = {
    tensors: Flags.boolean({description: 'list every tensor: name, type, shape (ggml order, ne0 first), offset, bytes'}),
    key: Flags.string({description: 'print one metadata value and nothing else', helpValue: 'NAME'}),
    json: Flags.boolean({description: 'print one JSON document (summary, metadata, tensors, loads) on stdout'}),
    check: Flags.boolean({description: 'exit 3 (invalid model) when run would refuse to load the model'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Inspect)
    const model = readGgufModel(args.file)
    // --key prints one value and nothing else: the check runs only when its exit status is asked for.
    const verdict = flags.key === undefined || flags.check ? loadVerdict(model) : {loads: true as const}
    // The memory a default context's KV cache takes (with and without the sliding-window ring).
    const kv = verdict.loads && verdict.config ? defaultKvFigures(verdict.config) : undefined

    if (flags.key !== undefined) {
      const kv = model.metadata.get(flags.key)
      if (!kv) throw new RunnerError('META_KEY_NOT_FOUND', `${args.file} has no metadata key ${quoted(flags.key)}`, ExitCode.failure)
      this.log(flags.json ? printableJson({key: kv.key, type: valueTypeName(kv.type), value: valueToJson(kv.value)}) : renderValue(kv))
    } else if (flags.json) {
      this.log(
        printableJson(
          {...(modelToJson(model) as object), ...(kv ? {memory: {kvCache: kv}} : {}), loads: verdictJson(verdict)},
          (_k, v: unknown) => (v === undefined ? null : v),
          2,
        ),
      )
    } else {
      this.log(renderSummary(summarizeModel(model)))
      const more = flags.tensors ? renderTensors(model) : renderMetadata(model)
      if (more !== undefined) this.log(`\n${more}`)
      if (kv) this.log(`\nmemory: ${describeKv(kv)} at ${kv.nCtx} positions, batch ${kv.nBatch}, ${kv.kvType.toUpperCase()}`)
      this.log(`\n${renderVerdict(verdict)}`)
    }
    if (flags.check && !verdict.loads) this.exit(ExitCode.invalidModel)
  }
}

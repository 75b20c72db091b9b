import {Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {readGgufModel} from '../lib/gguf/index.js'
import {checkModel} from '../lib/model-check/index.js'
import {printable, printableJson, readPrompt} from '../lib/util/index.js'

export default class Detokenize extends RunnerCommand {
  static override summary = "Turn token ids back into text with the model's vocabulary."
  static override description =
    "Reads only the model file's header. The ids come as arguments or on standard input (separated by spaces, commas or " +
    'newlines). Special tokens (<s>, <|im_end|>, ...) are left out unless --special renders them. The text goes to ' +
    'stdout as it is when stdout is a file or a pipe, with control characters escaped on a terminal; --json gives the text ' +
    'and its exact bytes (hex), since ids can end inside a UTF-8 character. An id outside the vocabulary is refused by position.'

  static override examples = [
    {description: 'Ids as arguments', command: '<%= config.bin %> detokenize -m ../shared/models/stories260K.gguf 1 403 407 261 378'},
    {
      description: 'From tokenize, through a pipe',
      command: '<%= config.bin %> tokenize -m model.gguf -p "Hello" --ids | <%= config.bin %> detokenize -m model.gguf',
    },
  ]

  // The ids are the raw positional tokens in the order given (oclif's argv, with strict off, moves a
  // repeated value next to its first occurrence: 261 378 261 came back as 261 261 378).
  static override strict = false
  static override usage = 'detokenize -m FILE [ID ...]'
  static override flags = {
    model: Flags.string({char: 'm', description: 'GGUF model file (or any shard of a split model)', required: true, helpValue: 'FILE'}),
    special: Flags.boolean({description: 'render special tokens as their text'}),
    json: Flags.boolean({description: 'print {"text": ..., "bytes": hex, "count": N}'}),
  }

  async run(): Promise<void> {
    const {flags, raw} = await this.parse(Detokenize)
    const argv = raw.filter((t) => t.type === 'arg').map((t) => t.input)
    const tokenizer = checkModel(readGgufModel(flags.model)).tokenizer
    if (argv.length === 0 && process.stdin.isTTY)
      throw new RunnerError('NO_IDS', 'no token ids: give them as arguments or pipe them on standard input', ExitCode.usage)
    const words = (argv.length > 0 ? argv : [await readPrompt(undefined, undefined)]).flatMap((w) => w.split(/[\s,]+/)).filter(Boolean)
    const ids = words.map((w, i) => {
      const id = /^\d+$/.test(w) ? Number(w) : NaN
      if (!Number.isInteger(id) || id >= tokenizer.vocabSize)
        throw new RunnerError(
          'BAD_TOKEN_ID',
          `id ${i + 1} (${JSON.stringify(printable(w, {max: 40}))}) is not a token id of this model (0 to ${tokenizer.vocabSize - 1})`,
          ExitCode.usage,
        )
      return id
    })
    const bytes = tokenizer.decodeBytes(ids, {unparseSpecial: flags.special === true})
    const text = new TextDecoder().decode(bytes)
    if (flags.json) return this.log(printableJson({text, bytes: Buffer.from(bytes).toString('hex'), count: ids.length}))
    if (process.stdout.isTTY) return this.log(printable(text, {newlines: true}))
    process.stdout.write(bytes)
  }
}

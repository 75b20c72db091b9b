import {Flags} from '@oclif/core'

import {modelArg, modelFlagOrArg, RunnerCommand} from '../lib/cli/index.js'
import {readGgufModel} from '../lib/gguf/index.js'
import {checkModel} from '../lib/model-check/index.js'
import {encodePrompt} from '../lib/tokenizer/index.js'
import {printable, printableJson, readPrompt} from '../lib/util/index.js'

export default class Tokenize extends RunnerCommand {
  static override summary = "Split text into the model's tokens: ids and pieces, as run would feed them."
  static override description =
    "Reads only the model file's header (the vocabulary), never the weights. The text comes from -p, --file or standard " +
    'input, and is tokenized exactly as `runner run` tokenizes a prompt: the beginning-of-sequence token when the model ' +
    'asks for one (--no-bos: not), special-token text as plain text unless --special. One line per token (id, then the ' +
    "piece's text quoted, control characters escaped), or --ids (ids only, space-separated), or --json."

  static override examples = [
    {description: 'Tokens of a prompt', command: '<%= config.bin %> tokenize ../shared/models/stories260K.gguf -p "Once upon a time"'},
    {description: 'Ids only, for a script', command: '<%= config.bin %> tokenize -m model.gguf --file prompt.txt --ids'},
    {
      description: 'With special tokens read as such, as JSON',
      command: '<%= config.bin %> tokenize -m model.gguf -p "<|im_start|>user" --special --json',
    },
  ]

  static override args = modelArg
  static override flags = {
    ...modelFlagOrArg,
    prompt: Flags.string({char: 'p', description: 'the text', exclusive: ['file'], helpValue: 'TEXT'}),
    file: Flags.string({char: 'f', description: 'read the text from a file', exclusive: ['prompt'], helpValue: 'FILE'}),
    'no-bos': Flags.boolean({description: 'do not add the beginning-of-sequence token the model asks for'}),
    special: Flags.boolean({description: 'read special-token text (<s>, <|im_start|>, ...) as those tokens'}),
    ids: Flags.boolean({description: 'print the ids only, space-separated', exclusive: ['json']}),
    json: Flags.boolean({description: 'print {"ids": [...], "pieces": [...], "count": N}'}),
  }

  async run(): Promise<void> {
    const {flags, args} = await this.parse(Tokenize)
    const tokenizer = checkModel(readGgufModel(await this.modelFromFlagOrArg(flags.model, args.model, 'tokenize', '-p'))).tokenizer
    const text = await readPrompt(flags.prompt, flags.file)
    const ids = encodePrompt(tokenizer, text, {addBos: !flags['no-bos'], parseSpecial: flags.special === true})
    const pieces = ids.map((id) => tokenizer.piece(id, {special: true}))
    if (flags.json) return this.log(printableJson({ids, pieces, count: ids.length}))
    if (flags.ids) return this.log(ids.join(' '))
    for (let i = 0; i < ids.length; i++) this.log(`${String(ids[i]).padStart(6)}  ${JSON.stringify(printable(pieces[i]!))}`)
  }
}

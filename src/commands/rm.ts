import {Args, Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {findStoredModel, modelsDir, removeStoredModel} from '../lib/models/index.js'
import {printable, printableJson} from '../lib/util/index.js'

export default class Rm extends RunnerCommand {
  static override summary = 'Remove models from the models folder.'
  static override description =
    'Takes the names `runner list` shows (or a unique shorter form). The model stops being one first (its manifest ' +
    'goes), then its files go, except any another pulled model still lists; folders left empty are removed. Files ' +
    'outside the models folder are never touched: rm takes names, not paths.'

  static override examples = [
    {description: 'Remove a pulled model', command: '<%= config.bin %> rm ggml-org/SmolLM3-3B-GGUF:Q4_K_M'},
    {description: 'Several at once', command: '<%= config.bin %> rm stories260K tinyllama'},
  ]

  static override strict = false
  static override args = {model: Args.string({description: 'model name (see runner list); several may be given', required: true})}
  static override flags = {json: Flags.boolean({description: 'print {"removed": [{name, files}]}'})}

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Rm)
    const dir = modelsDir()
    // Every name is found before anything is removed: a typo in the third name removes nothing.
    const models = []
    for (const name of argv as string[]) {
      const m = await findStoredModel(dir, name)
      if (!m)
        throw new RunnerError(
          'MODEL_NOT_FOUND',
          `no model ${JSON.stringify(printable(name, {max: 120}))} in ${printable(dir)} (\`runner list\` shows the names)`,
          ExitCode.invalidModel,
        )
      models.push(m)
    }
    const removed = []
    for (const m of models) {
      const files = await removeStoredModel(dir, m)
      removed.push({name: m.name, files})
      if (!flags.json) this.log(`removed ${printable(m.name)}`)
    }
    if (flags.json) this.log(printableJson({removed}))
  }
}

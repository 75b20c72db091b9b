import {Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/index.js'
import {listModels, modelsDir} from '../lib/models/index.js'
import {formatBytes, formatCount, printable, printableJson} from '../lib/util/index.js'

export default class List extends RunnerCommand {
  static override summary = 'List the models in the models folder.'
  static override description =
    'Every model `runner pull` fetched, by name, and every .gguf file put into the folder by hand (by its file name ' +
    'without .gguf), with size, architecture, main weight type, parameters and when it arrived; each name works with -m ' +
    "and the model argument of every command, as does any unique shorter form (REPO, REPO:QUANT, a file's stem). " +
    'The folder is $RUNNER_MODELS, else $XDG_DATA_HOME/runner/models (~/.local/share/runner/models).'

  // ollama's `ls`; hidden so --help lists each command once.
  static override hiddenAliases = ['ls']

  static override examples = [
    {description: 'The models and their sizes', command: '<%= config.bin %> list'},
    {description: 'For a script', command: "<%= config.bin %> list --json | jq -r '.models[].name'"},
  ]

  static override flags = {
    json: Flags.boolean({
      description: 'print {"dir": ..., "models": [{name, path, bytes, architecture, type, parameters, modified, source}]}',
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(List)
    const dir = modelsDir()
    const models = await listModels(dir)
    if (flags.json) return this.log(printableJson({dir, models}))
    if (models.length === 0) return this.log(`no models in ${printable(dir)} yet: \`runner pull OWNER/REPO:QUANT\` fetches one`)
    const rows = [
      ['NAME', 'SIZE', 'ARCH', 'TYPE', 'PARAMS', 'MODIFIED'],
      ...models.map((m) => [
        printable(m.name),
        formatBytes(m.bytes),
        m.error ? `unreadable (${m.error})` : printable(m.architecture ?? '?'),
        m.type ?? '',
        m.parameters === undefined ? '' : formatCount(m.parameters),
        m.modified.slice(0, 16).replace('T', ' '),
      ]),
    ]
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
    for (const r of rows)
      this.log(
        r
          .map((cell, c) => cell.padEnd(widths[c]!))
          .join('  ')
          .trimEnd(),
      )
  }
}

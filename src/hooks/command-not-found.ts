/**
 * oclif's command_not_found hook: one line naming the command and the nearest ones, exit 2, instead
 * of oclif's bare "command rn not found". `runner model.gguf` (a model where a command goes) gets the
 * command to run it with.
 */
import type {Hook} from '@oclif/core'

import {didYouMean} from '../lib/cli/index.js'
import {findStoredModel, modelsDir} from '../lib/models/index.js'
import {printable} from '../lib/util/index.js'

/** A model where a command goes: a .gguf path, or the name of a model in the models folder (`runner stories260K`). */
async function isModel(id: string): Promise<boolean> {
  if (/\.gguf$/i.test(id)) return true
  return (await findStoredModel(modelsDir(), id).catch(() => undefined)) !== undefined
}

const hook: Hook<'command_not_found'> = async function (opts) {
  const id = opts.id
  // Commands, not their hidden aliases (list's `ls`): one suggestion per command.
  const ids = opts.config.commands.filter((c) => !c.hidden && !c.id.includes(':')).map((c) => c.id)
  const near = didYouMean(id, ids)
  let hint = near.length > 0 ? ` Did you mean ${near.map((c) => `\`${opts.config.bin} ${c}\``).join(' or ')}?` : ''
  if (await isModel(id))
    hint = ` To run a model: \`${opts.config.bin} run ${printable(id)} -p TEXT\` (or \`${opts.config.bin} chat ${printable(id)}\`).`
  process.stderr.write(
    `${opts.config.bin}: ${printable(id)} is not a ${opts.config.bin} command.${hint} \`${opts.config.bin} --help\` lists them.\n`,
  )
  this.exit(2)
}

export default hook

/**
 * oclif's command_not_found hook: one line naming the command and the nearest ones, exit 2, instead
 * of oclif's bare "command rn not found". `runner model.gguf` (a model where a command goes) gets the
 * command to run it with.
 */
import type {Hook} from '@oclif/core'

import {didYouMean} from '../lib/cli/index.js'
import {printable} from '../lib/util/index.js'

const hook: Hook<'command_not_found'> = async function (opts) {
  const id = opts.id
  const ids = opts.config.commandIDs.filter((c) => !c.includes(':'))
  const near = didYouMean(id, ids)
  let hint = near.length > 0 ? ` Did you mean ${near.map((c) => `\`${opts.config.bin} ${c}\``).join(' or ')}?` : ''
  if (/\.gguf$/i.test(id))
    hint = ` To run a model: \`${opts.config.bin} run ${printable(id)} -p TEXT\` (or \`${opts.config.bin} chat ${printable(id)}\`).`
  process.stderr.write(
    `${opts.config.bin}: ${printable(id)} is not a ${opts.config.bin} command.${hint} \`${opts.config.bin} --help\` lists them.\n`,
  )
  this.exit(2)
}

export default hook

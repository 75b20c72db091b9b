/**
 * oclif's init hook: every command's flags show their RUNNER_<FLAG> variable in --help (and to
 * completion), present and future commands alike, without a line in any of them (lib/cli/flag-env.ts).
 */
import type {Hook} from '@oclif/core'

import {describeEnv} from '../lib/cli/index.js'

const hook: Hook<'init'> = async function (opts) {
  describeEnv(opts.config.commands, opts.config.name)
}

export default hook

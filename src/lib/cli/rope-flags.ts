/**
 * llama.cpp's rope flags (issue #23), by its names and meanings: each replaces what the model file
 * declares under rope.scaling.* (docs/long-context.md). Values are read as text and refused by flag
 * name here; how they combine (none never scales, YaRN's ramp needs YaRN) is refused where the model's
 * declaration is known (src/lib/arch/rope-scaling.ts), naming the flag too.
 */
import {Flags} from '@oclif/core'

import {checkRopeOverrides, ROPE_SCALING_TYPES, type RopeOverrides, type RopeScalingType, YARN_DEFAULTS} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {parseNumberFlag} from './sampling-flags.js'

const number = (description: string) => Flags.string({description, helpValue: 'N', helpGroup: 'ROPE SCALING'})

export const ropeFlags = {
  'rope-scaling': Flags.string({
    description:
      'rope frequency scaling method (default: what the model declares, linear if nothing); e.g. --rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 4096 -c 16384',
    options: [...ROPE_SCALING_TYPES],
    helpGroup: 'ROPE SCALING',
  }),
  'rope-scale': number('rope context scaling factor: expands the context by N (the frequency scale is 1/N; default: from the model)'),
  'rope-freq-base': number('rope base frequency, used by NTK-aware scaling (default: from the model)'),
  'rope-freq-scale': number('rope frequency scaling factor: expands the context by 1/N (default: from the model)'),
  'yarn-orig-ctx': number(
    "YaRN: the model's original context size (default: the model's rope.scaling.original_context_length, else its training context)",
  ),
  'yarn-ext-factor': number('YaRN: extrapolation mix factor (default: 1 with yarn, else 0; 0.0 = full interpolation)'),
  'yarn-attn-factor': number(
    'YaRN: scale of the attention magnitude (default: 1; with YaRN on, llama.cpp computes it from the factor, so it is refused there)',
  ),
  'yarn-beta-slow': number(`YaRN: high correction dim or alpha (default: ${YARN_DEFAULTS.betaSlow})`),
  'yarn-beta-fast': number(`YaRN: low correction dim or beta (default: ${YARN_DEFAULTS.betaFast})`),
}

export type RopeFlagValues = {readonly [K in keyof typeof ropeFlags]?: string}

/** The overrides the flags give (none given: undefined), each refused by its flag name when bad. */
export function ropeFromFlags(flags: RopeFlagValues): RopeOverrides | undefined {
  const scale = parseNumberFlag(flags['rope-scale'], '--rope-scale')
  const freqScale = parseNumberFlag(flags['rope-freq-scale'], '--rope-freq-scale')
  if (scale !== undefined && freqScale !== undefined)
    throw new RunnerError(
      'ROPE_BAD_OPTION',
      `--rope-scale ${scale} and --rope-freq-scale ${freqScale} both set the frequency scale; give one`,
      ExitCode.usage,
    )
  if (scale !== undefined && !(scale > 0))
    throw new RunnerError('ROPE_BAD_OPTION', `--rope-scale ${scale}: must be a finite number > 0`, ExitCode.usage)
  const origCtx = parseNumberFlag(flags['yarn-orig-ctx'], '--yarn-orig-ctx')
  const o: RopeOverrides = {
    scaling: flags['rope-scaling'] as RopeScalingType | undefined,
    freqBase: parseNumberFlag(flags['rope-freq-base'], '--rope-freq-base'),
    // As llama.cpp's --rope-scale: the frequency scale is 1 / N in float.
    freqScale: scale !== undefined ? Math.fround(1 / Math.fround(scale)) : freqScale,
    yarnOrigCtx: origCtx,
    yarnExtFactor: parseNumberFlag(flags['yarn-ext-factor'], '--yarn-ext-factor'),
    yarnAttnFactor: parseNumberFlag(flags['yarn-attn-factor'], '--yarn-attn-factor'),
    yarnBetaFast: parseNumberFlag(flags['yarn-beta-fast'], '--yarn-beta-fast'),
    yarnBetaSlow: parseNumberFlag(flags['yarn-beta-slow'], '--yarn-beta-slow'),
  }
  const given = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as RopeOverrides
  if (Object.keys(given).length === 0) return undefined
  checkRopeOverrides(given)
  return given
}

/**
 * Speculative decoding's flags (docs/speculative.md), shared by run, chat and serve: one draft
 * source per run (--draft FILE or --draft-lookup), its settings (each refused without its source:
 * nothing accepted is ignored), and --draft-required. llama.cpp's names where it has one
 * (--model-draft, --draft-max/--draft-n, --draft-p-min, --threads-draft); its --draft means
 * --draft-max there, a draft model here, as the issue that asked for it spells it.
 */
import {Flags} from '@oclif/core'

import {LOOKUP_DEFAULTS, MAX_DRAFT_TOKENS, MAX_LOOKUP_NGRAM, MODEL_DRAFT_DEFAULTS} from '../engine/index.js'
import {resolveModelPath} from '../models/index.js'
import type {SpeculationOptions} from '../speculative/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {parseNumberFlag} from './sampling-flags.js'

const SOURCES = ['draft', 'draft-lookup']

export const draftFlags = {
  draft: Flags.string({
    aliases: ['model-draft'],
    description:
      'speculative decoding with this draft model (a file or a model name): a smaller model of the same vocabulary proposes tokens, the model verifies each; the output is unchanged, only the speed',
    helpValue: 'FILE|NAME',
    exclusive: ['draft-lookup'],
    parse: async (input: string) => resolveModelPath(input, '--draft'),
  }),
  'draft-lookup': Flags.boolean({
    description: 'speculative decoding by prompt lookup: drafts copied from where the text so far repeats an n-gram (no second model)',
    exclusive: ['draft'],
  }),
  'draft-max': Flags.integer({
    aliases: ['draft-n'],
    description: `most tokens drafted per step (default ${MODEL_DRAFT_DEFAULTS.nMax} with --draft, ${LOOKUP_DEFAULTS.nMax} with --draft-lookup)`,
    min: 1,
    max: MAX_DRAFT_TOKENS,
    helpValue: 'N',
  }),
  'draft-p-min': Flags.string({
    description: `--draft: stop a draft at a token the draft model gives less probability (default ${MODEL_DRAFT_DEFAULTS.pMin})`,
    dependsOn: ['draft'],
    helpValue: 'P',
  }),
  'threads-draft': Flags.integer({
    description: "--draft: the draft model's threads (default: as --threads)",
    dependsOn: ['draft'],
    min: 1,
    max: 256,
    helpValue: 'N',
  }),
  'lookup-ngram-min': Flags.integer({
    description: `--draft-lookup: the shortest repeated n-gram that drafts (default ${LOOKUP_DEFAULTS.ngramMin})`,
    dependsOn: ['draft-lookup'],
    min: 1,
    max: MAX_LOOKUP_NGRAM,
    helpValue: 'N',
  }),
  'lookup-ngram-max': Flags.integer({
    description: `--draft-lookup: the longest n-gram matched, tried first (default ${LOOKUP_DEFAULTS.ngramMax})`,
    dependsOn: ['draft-lookup'],
    min: 1,
    max: MAX_LOOKUP_NGRAM,
    helpValue: 'N',
  }),
  'draft-required': Flags.boolean({
    description: 'fail when the draft cannot be used (another vocabulary, not a model) instead of warning and running without it',
  }),
}

export interface DraftFlagValues {
  readonly draft?: string
  readonly 'draft-lookup'?: boolean
  readonly 'draft-max'?: number
  readonly 'draft-p-min'?: string
  readonly 'threads-draft'?: number
  readonly 'lookup-ngram-min'?: number
  readonly 'lookup-ngram-max'?: number
  readonly 'draft-required'?: boolean
}

/** The speculation the flags ask for (undefined: none); --draft-max and --draft-required need a source. */
export function speculationFromFlags(flags: DraftFlagValues): SpeculationOptions | undefined {
  const required = flags['draft-required'] === true
  const nMax = flags['draft-max']
  if (flags.draft === undefined && flags['draft-lookup'] !== true) {
    const orphan = nMax !== undefined ? '--draft-max' : required ? '--draft-required' : undefined
    if (orphan)
      throw new RunnerError('BAD_FLAG', `${orphan} needs a draft source: ${SOURCES.map((s) => `--${s}`).join(' or ')}`, ExitCode.usage)
    return undefined
  }
  if (flags.draft !== undefined) {
    const pMin = parseNumberFlag(flags['draft-p-min'], '--draft-p-min')
    if (pMin !== undefined && !(pMin >= 0 && pMin <= 1))
      throw new RunnerError('BAD_FLAG', `--draft-p-min ${pMin} must be a probability from 0 to 1`, ExitCode.usage)
    return {
      source: 'model',
      path: flags.draft,
      required,
      ...(nMax !== undefined ? {nMax} : {}),
      ...(pMin !== undefined ? {pMin} : {}),
      ...(flags['threads-draft'] !== undefined ? {threads: flags['threads-draft']} : {}),
    }
  }
  return {
    source: 'lookup',
    required,
    ...(nMax !== undefined ? {nMax} : {}),
    ...(flags['lookup-ngram-min'] !== undefined ? {ngramMin: flags['lookup-ngram-min']} : {}),
    ...(flags['lookup-ngram-max'] !== undefined ? {ngramMax: flags['lookup-ngram-max']} : {}),
  }
}

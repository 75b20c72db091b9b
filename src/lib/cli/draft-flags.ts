/**
 * Speculative decoding's flags (docs/speculative.md), shared by run, chat and serve: one draft
 * source per run (--draft FILE, --draft-lookup or --draft-mtp), its settings (each refused without its source:
 * nothing accepted is ignored), and --draft-required. llama.cpp's names where it has one
 * (--model-draft, --draft-max/--draft-n, --draft-p-min, --threads-draft); its --draft means
 * --draft-max there, a draft model here, as the issue that asked for it spells it.
 */
import {Flags} from '@oclif/core'

import {LOOKUP_DEFAULTS, MAX_DRAFT_TOKENS, MAX_LOOKUP_NGRAM, MODEL_DRAFT_DEFAULTS, MTP_DRAFT_DEFAULTS} from '../engine/index.js'
import {resolveModelPath} from '../models/index.js'
import type {SpeculationOptions} from '../speculative/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {parseNumberFlag} from './sampling-flags.js'

const SOURCES = ['draft', 'draft-lookup', 'draft-mtp']

export const draftFlags = {
  draft: Flags.string({
    aliases: ['model-draft'],
    description:
      'speculative decoding with this draft model (a file or a model name): a smaller model of the same vocabulary proposes tokens, the model verifies each; the output is unchanged, only the speed (default: none)',
    helpValue: 'FILE|NAME',
    exclusive: ['draft-lookup', 'draft-mtp'],
    parse: async (input: string) => resolveModelPath(input, '--draft'),
  }),
  'draft-lookup': Flags.boolean({
    description: 'speculative decoding by prompt lookup: drafts copied from where the text so far repeats an n-gram (no second model)',
    exclusive: ['draft', 'draft-mtp'],
  }),
  'draft-mtp': Flags.boolean({
    description:
      "speculative decoding with the model's own MTP head (a GGUF with nextn layers, as llama.cpp's draft-mtp): no second model; a model without one is warned about and run without speculation",
    exclusive: ['draft', 'draft-lookup'],
  }),
  'draft-max': Flags.integer({
    aliases: ['draft-n'],
    description: `most tokens drafted per step (default ${MODEL_DRAFT_DEFAULTS.nMax} with --draft, ${LOOKUP_DEFAULTS.nMax} with --draft-lookup, ${MTP_DRAFT_DEFAULTS.nMax} with --draft-mtp)`,
    min: 1,
    max: MAX_DRAFT_TOKENS,
    helpValue: 'N',
  }),
  // --draft or --draft-mtp (oclif's dependsOn wants all it lists): checked in speculationFromFlags.
  'draft-p-min': Flags.string({
    description: `--draft, --draft-mtp: stop a draft at a token the draft model gives less probability (default ${MODEL_DRAFT_DEFAULTS.pMin})`,
    helpValue: 'P',
  }),
  'threads-draft': Flags.integer({
    description: "--draft, --draft-mtp: the draft model's (or MTP head's) threads (default: as --threads)",
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
  readonly 'draft-mtp'?: boolean
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
  const mtp = flags['draft-mtp'] === true
  if (flags.draft === undefined && flags['draft-lookup'] !== true && !mtp) {
    const orphan = nMax !== undefined ? '--draft-max' : required ? '--draft-required' : undefined
    if (orphan)
      throw new RunnerError('BAD_FLAG', `${orphan} needs a draft source: ${SOURCES.map((s) => `--${s}`).join(' or ')}`, ExitCode.usage)
  }
  // Settings of a draft that runs weights, refused without one (nothing accepted is ignored).
  for (const name of ['draft-p-min', 'threads-draft'] as const)
    if (flags[name] !== undefined && flags.draft === undefined && !mtp)
      throw new RunnerError('BAD_FLAG', `--${name} needs --draft or --draft-mtp`, ExitCode.usage)
  if (flags.draft === undefined && flags['draft-lookup'] !== true && !mtp) return undefined
  if (flags.draft !== undefined || mtp) {
    const pMin = parseNumberFlag(flags['draft-p-min'], '--draft-p-min')
    if (pMin !== undefined && !(pMin >= 0 && pMin <= 1))
      throw new RunnerError('BAD_FLAG', `--draft-p-min ${pMin} must be a probability from 0 to 1`, ExitCode.usage)
    const settings = {
      required,
      ...(nMax !== undefined ? {nMax} : {}),
      ...(pMin !== undefined ? {pMin} : {}),
      ...(flags['threads-draft'] !== undefined ? {threads: flags['threads-draft']} : {}),
    }
    return flags.draft !== undefined ? {source: 'model', path: flags.draft, ...settings} : {source: 'mtp', ...settings}
  }
  return {
    source: 'lookup',
    required,
    ...(nMax !== undefined ? {nMax} : {}),
    ...(flags['lookup-ngram-min'] !== undefined ? {ngramMin: flags['lookup-ngram-min']} : {}),
    ...(flags['lookup-ngram-max'] !== undefined ? {ngramMax: flags['lookup-ngram-max']} : {}),
  }
}

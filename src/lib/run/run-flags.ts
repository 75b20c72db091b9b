/** The flags of `runner run` (src/commands/run.ts renders; this says what it accepts). */
import {Flags} from '@oclif/core'

import {
  constraintFlags,
  contextFlags,
  contextShiftFlags,
  draftFlags,
  loraFlag,
  modelFlagOrArg,
  samplingFlags,
  signatureFlags,
} from '../cli/index.js'

export const runFlags = {
  ...modelFlagOrArg,
  prompt: Flags.string({char: 'p', description: 'prompt text', exclusive: ['file'], helpValue: 'TEXT'}),
  file: Flags.string({char: 'f', description: 'read the prompt from a file', exclusive: ['prompt'], helpValue: 'FILE'}),
  'n-predict': Flags.integer({
    char: 'n',
    description: 'tokens to generate; -1 = until end of text or a full context (with --context-shift: until end of text)',
    default: -1,
    min: -1,
  }),
  ...contextFlags,
  ...contextShiftFlags,
  ...loraFlag,
  ...samplingFlags,
  ...constraintFlags,
  ...draftFlags,
  ...signatureFlags,
  'no-bos': Flags.boolean({description: 'do not add the beginning-of-sequence token the model asks for'}),
  special: Flags.boolean({
    description:
      'read special-token text in the prompt (<|im_start|>, <s>, ...) as those tokens, as a chat template writes them; a BOS already written is not added again',
  }),
  json: Flags.boolean({description: 'print one JSON document (text, token ids, finish reason, timings) instead of streaming'}),
  transcript: Flags.string({
    description: 'write a receipt of this run (model and build hashes, every setting, seed, tokens, bytes) that `runner verify` replays',
    helpValue: 'FILE',
  }),
  'sign-key': Flags.string({
    description: 'sign the receipt with this Ed25519 private key (from `runner keygen`)',
    dependsOn: ['transcript'],
    helpValue: 'KEY',
  }),
  'transcript-prev': Flags.string({
    description: 'link the receipt to a previous one by its chain hash',
    dependsOn: ['transcript'],
    helpValue: 'FILE',
  }),
}

/** The flags of `runner chat` (src/commands/chat.ts renders; this says what it accepts). */
import {Flags} from '@oclif/core'

import {BUILTIN_TEMPLATE_NAMES} from '../chat/index.js'
import {constraintFlags, contextFlags, draftFlags, loraFlag, modelFlagOrArg, samplingFlags, signatureFlags} from '../cli/index.js'

export const chatFlags = {
  ...modelFlagOrArg,
  system: Flags.string({description: 'system prompt', helpValue: 'TEXT'}),
  'n-predict': Flags.integer({
    char: 'n',
    description: 'most tokens per reply; -1 = until the end of the reply or a full context',
    default: -1,
    min: -1,
  }),
  ...contextFlags,
  ...samplingFlags,
  ...constraintFlags,
  ...draftFlags,
  ...loraFlag,
  ...signatureFlags,
  'context-shift': Flags.boolean({
    description: 'drop the oldest turns when a message does not fit; shift a full context within a reply, keeping the system prompt',
  }),
  'chat-template': Flags.string({
    description: `a built-in template (${BUILTIN_TEMPLATE_NAMES.join(', ')}, as llama.cpp names them) or a Jinja template file; a name wins over a file of that name (give ./NAME) (default: the model's own, else chatml)`,
    helpValue: 'NAME|FILE',
  }),
  json: Flags.boolean({
    description: 'line mode with one JSON document per answer: text, tokens, promptTokens, cachedTokens, finishReason, timings',
  }),
}

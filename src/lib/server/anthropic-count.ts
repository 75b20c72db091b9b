/**
 * POST /v1/messages/count_tokens (Anthropic's MessageCountTokensParams → {input_tokens}): the
 * Messages body without the fields that only steer generation, rendered and tokenized by the very
 * function /v1/messages uses, so the count is the `usage.input_tokens` that request would report.
 * The count is given even when it exceeds a slot's context (that is what a client counts for).
 */
import type {FastifyRequest} from 'fastify'

import {anthropicPrompt, MESSAGES_SCHEMA, UNSUPPORTED} from './anthropic.js'
import {checkModel} from './requests.js'
import {validateBody} from './schemas.js'
import type {ServerState} from './state.js'
import {anthropicOutputConfig} from './structured.js'

/** Fields of /v1/messages that do not change the prompt; count_tokens does not take them (as Anthropic's does not). */
const GENERATION_ONLY = new Set(['max_tokens', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'stream', 'metadata'])

/** The Messages schema less GENERATION_ONLY, so a field added to /v1/messages is counted here too. */
export const COUNT_TOKENS_SCHEMA = {
  ...MESSAGES_SCHEMA,
  required: MESSAGES_SCHEMA.required.filter((k) => !GENERATION_ONLY.has(k)),
  properties: Object.fromEntries(Object.entries(MESSAGES_SCHEMA.properties).filter(([k]) => !GENERATION_ONLY.has(k))),
}

export async function countTokensRoute(s: ServerState, req: FastifyRequest): Promise<unknown> {
  const body = validateBody(COUNT_TOKENS_SCHEMA, req.body, UNSUPPORTED)
  checkModel(s.env, body)
  // Checked as /v1/messages checks it (a bad schema is refused); a constraint does not change the prompt.
  anthropicOutputConfig(body.output_config as Parameters<typeof anthropicOutputConfig>[0])
  return {input_tokens: (await anthropicPrompt(s.env, body)).length}
}

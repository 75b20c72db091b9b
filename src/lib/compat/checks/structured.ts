/**
 * `structured`: constrained decoding as `runner run --json-schema` does it (compileConstraint, then
 * generate with the constraint) gives (1) a document that ajv validates against the schema and (2)
 * for a schema {enum: [50 labels]}, an answer that is exactly one of the labels. The anchor is ajv,
 * a validator that knows nothing of the grammar compiler.
 */
import {Ajv} from 'ajv'

import {Model, Session} from '../../engine/index.js'
import {generate} from '../../generate/index.js'
import {compileConstraint} from '../../grammar/index.js'
import {resolveSamplingOptions} from '../../sampling/index.js'
import {encodePrompt} from '../../tokenizer/index.js'
import {type CheckClass, fail, numberParam, pass} from '../types.js'

/** Every value bounded, so a document ends within the budget even where the model is noise. */
export const PERSON_SCHEMA = {
  type: 'object',
  properties: {
    name: {type: 'string', minLength: 1, maxLength: 10},
    age: {type: 'integer', minimum: 0, maximum: 99},
    pet: {enum: ['cat', 'dog']},
  },
  required: ['name', 'age', 'pet'],
  additionalProperties: false,
} as const

/** 50 labels, with shared prefixes (art/arts, sport/sports, science/science-fiction) so that a prefix is not an answer. */
// prettier-ignore
export const LABELS = [
  'art', 'arts', 'astronomy', 'biology', 'botany', 'business', 'chemistry', 'cinema', 'climate', 'comedy',
  'cooking', 'crime', 'dance', 'design', 'economics', 'education', 'energy', 'engineering', 'fashion', 'film',
  'finance', 'fitness', 'gardening', 'geography', 'geology', 'health', 'history', 'law', 'linguistics', 'literature',
  'mathematics', 'medicine', 'music', 'mythology', 'nature', 'news', 'philosophy', 'physics', 'poetry', 'politics',
  'psychology', 'religion', 'science', 'science-fiction', 'sociology', 'space', 'sport', 'sports', 'technology', 'travel',
] as const

export const ENUM_SCHEMA = {enum: LABELS}

const PERSON_PROMPT = 'A person, as JSON:'
const ENUM_PROMPT = 'The topic of this story:'

export type DocumentVerdict = {readonly ok: true; readonly value: unknown} | {readonly ok: false; readonly why: string}

/** Is `text` one JSON document that ajv validates against `schema`? */
export function documentVerdict(schema: object, text: string): DocumentVerdict {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return {ok: false, why: `${quote(text)} is not JSON (${(error as Error).message})`}
  }
  const ajv = new Ajv({strict: false, allErrors: true})
  const validate = ajv.compile(schema)
  if (!validate(value))
    return {ok: false, why: `${JSON.stringify(value)} is not valid under ajv: ${ajv.errorsText(validate.errors, {dataVar: 'answer'})}`}
  return {ok: true, value}
}

function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text)
}

export const structured: CheckClass = {
  name: 'structured',
  summary:
    "a JSON-schema-constrained answer (runner run --json-schema's path) is valid under ajv, and a 50-label enum's constrained answer is exactly one label",
  params: {
    maxTokens: {
      type: 'integer',
      minimum: 1,
      description: 'most tokens of each answer (default 512: room for the whitespace the grammar allows)',
    },
  },
  async when() {
    return undefined
  },
  async run(row, params, env) {
    const maxTokens = numberParam(params, 'maxTokens', 512)
    const person = compileConstraint({kind: 'json-schema', text: JSON.stringify(PERSON_SCHEMA)})
    const labels = compileConstraint({kind: 'json-schema', text: JSON.stringify(ENUM_SCHEMA)})
    const model = await Model.load(row.path, {signal: env.signal})
    try {
      const tokenizer = model.tokenizer
      const ctx = await model.createContext({nCtx: maxTokens + 64, threads: env.threads})
      try {
        const session = new Session(ctx)
        const sampling = resolveSamplingOptions({temperature: 0, seed: 0})
        const answer = async (prompt: string, constraint: typeof person) => {
          const ids = encodePrompt(tokenizer, prompt, {addBos: true, parseSpecial: false})
          const g = generate(session, {
            prompt: ids,
            maxTokens,
            sampling,
            signal: env.signal,
            stopTokens: [...tokenizer.eogTokens],
            constraint,
          })
          return g.result
        }
        const one = await answer(PERSON_PROMPT, person)
        if (one.finishReason !== 'eos')
          return fail(
            `the schema answer ended on ${one.finishReason} after ${one.tokenIds.length} tokens, not complete: ${quote(one.text)}`,
          )
        const v1 = documentVerdict(PERSON_SCHEMA, one.text)
        if (!v1.ok) return fail(`the schema answer ${v1.why}`)
        const two = await answer(ENUM_PROMPT, labels)
        if (two.finishReason !== 'eos')
          return fail(`the enum answer ended on ${two.finishReason} after ${two.tokenIds.length} tokens, not complete: ${quote(two.text)}`)
        const v2 = documentVerdict(ENUM_SCHEMA, two.text)
        if (!v2.ok) return fail(`the enum answer ${v2.why}`)
        const member = LABELS.indexOf(v2.value as (typeof LABELS)[number])
        const ms = (x: number) => Math.round(x * 10) / 10
        return pass(
          `schema answer ${JSON.stringify(v1.value)} (${one.tokenIds.length} tokens, ${one.usage.forcedTokens} forced) valid under ajv; ` +
            `enum answer ${JSON.stringify(v2.value)} (label ${member + 1} of ${LABELS.length}, ${two.tokenIds.length} tokens) valid under ajv; ` +
            `compile ${ms(person.compileMs)} + ${ms(labels.compileMs)} ms, masks ${ms(one.timings.maskMs + two.timings.maskMs)} ms`,
        )
      } finally {
        ctx.dispose()
      }
    } finally {
      model.dispose()
    }
  },
}

import {Ajv} from 'ajv'

import {ROPE_SCALING_TYPES, type RopeOverrides} from '../arch/index.js'

import {RECEIPT_FORMAT, RECEIPT_VERSION, type ReceiptBody, type ReceiptSignature} from './format.js'
import {PROFILE} from './profile.js'

const hex = (bytes: number) => ({type: 'string', pattern: `^[0-9a-f]{${2 * bytes}}$`})
const tokenList = {type: 'array', items: {type: 'integer', minimum: 0, maximum: 2147483647}}
const obj = (properties: Record<string, unknown>) => ({
  type: 'object',
  additionalProperties: false,
  required: Object.keys(properties),
  properties,
})

/** An object with every key of `required` and any of `optional`. */
const withOptional = (required: Record<string, unknown>, optional: Record<string, unknown>) => ({
  ...obj(required),
  properties: {...required, ...optional},
})

/**
 * The structure of a version-1 receipt. Ranges of the settings are not checked here: the replay
 * passes them through the same validation the CLI uses (sampling options, context options).
 */
const RECEIPT_SCHEMA = {
  ...obj({
    format: {const: RECEIPT_FORMAT},
    version: {const: RECEIPT_VERSION},
    created: obj({started: {type: 'string'}, finished: {type: 'string'}}),
    model: withOptional(
      {
        architecture: {type: 'string'},
        files: {type: 'array', minItems: 1, items: obj({name: {type: 'string'}, bytes: {type: 'integer', minimum: 0}, sha256: hex(32)})},
      },
      {
        adapters: {
          type: 'array',
          minItems: 1,
          items: obj({
            name: {type: 'string'},
            bytes: {type: 'integer', minimum: 0},
            sha256: hex(32),
            alpha: {type: 'number'},
            scale: {type: 'number'},
          }),
        },
        signature: obj({
          keyFingerprint: hex(32),
          curve: {enum: ['P-256', 'P-384', 'P-521']},
          predicateType: {type: 'string'},
          bundleSha256: hex(32),
        }),
      },
    ),
    engine: obj({
      runner: {type: 'string'},
      abi: {type: 'integer'},
      addonSha256: hex(32),
      packageSha256: hex(32),
      cpuLevel: {type: 'string'},
      cpu: {type: 'string'},
      platform: {type: 'string'},
    }),
    profile: obj({name: {const: PROFILE.name}, version: {const: PROFILE.version}}),
    config: withOptional(
      {
        maxTokens: {type: 'integer'},
        nCtx: {type: 'integer'},
        nBatch: {type: 'integer'},
        threads: {type: 'integer'},
        kvType: {enum: ['f16', 'f32']},
        addBos: {type: 'boolean'},
        parseSpecial: {type: 'boolean'},
        stopTokens: tokenList,
        sampling: obj({
          temperature: {type: 'number'},
          topK: {type: 'integer'},
          topP: {type: 'number'},
          minP: {type: 'number'},
          repeatPenalty: {type: 'number'},
          penaltyLastN: {type: 'integer'},
          presencePenalty: {type: 'number'},
          frequencyPenalty: {type: 'number'},
          seed: {type: 'string', pattern: '^(0|[1-9][0-9]{0,19})$'},
        }),
      },
      {
        constraint: obj({kind: {enum: ['json-schema', 'gbnf', 'json-object']}, sha256: hex(32), text: {type: 'string'}}),
        // Ranges are the loader's (checkRopeOverrides), as for the other settings.
        rope: withOptional(
          {},
          {
            scaling: {enum: [...ROPE_SCALING_TYPES]},
            freqBase: {type: 'number'},
            freqScale: {type: 'number'},
            yarnOrigCtx: {type: 'integer'},
            yarnExtFactor: {type: 'number'},
            yarnAttnFactor: {type: 'number'},
            yarnBetaFast: {type: 'number'},
            yarnBetaSlow: {type: 'number'},
          },
        ),
        // Speculative decoding the run used: recorded, never needed to replay (it cannot change a token).
        // (properties in the writer's order, for canonicalize; oneOf: each source's own settings)
        draft: {
          ...withOptional(
            {source: {enum: ['lookup', 'model', 'mtp']}, nMax: {type: 'integer'}},
            {ngramMin: {type: 'integer'}, ngramMax: {type: 'integer'}, pMin: {type: 'number'}, model: {type: 'string'}},
          ),
          oneOf: [
            {
              properties: {source: {const: 'lookup'}},
              required: ['ngramMin', 'ngramMax'],
              not: {anyOf: [{required: ['pMin']}, {required: ['model']}]},
            },
            {
              properties: {source: {const: 'model'}},
              required: ['pMin', 'model'],
              not: {anyOf: [{required: ['ngramMin']}, {required: ['ngramMax']}]},
            },
            {
              properties: {source: {const: 'mtp'}},
              required: ['pMin'],
              not: {anyOf: [{required: ['ngramMin']}, {required: ['ngramMax']}, {required: ['model']}]},
            },
          ],
        },
        // Context shift (run --context-shift): the positions kept, as the engine counts them; replayed by verify.
        contextShift: obj({keep: {type: 'integer', minimum: 0}}),
      },
    ),
    prompt: obj({text: {type: 'string'}, tokens: tokenList}),
    output: obj({
      tokens: tokenList,
      logprobs: {type: 'array', items: {type: 'number'}},
      text: {type: 'string'},
      bytes: {type: 'string', pattern: '^([0-9a-f]{2})*$'},
      finishReason: {enum: ['length', 'eos', 'aborted', 'stopped', 'context']},
    }),
    prev: {anyOf: [{type: 'null'}, hex(32)]},
    chain: hex(32),
    signature: obj({algorithm: {const: 'ed25519'}, publicKey: hex(32), value: hex(64)}),
  }),
  required: ['format', 'version', 'created', 'model', 'engine', 'profile', 'config', 'prompt', 'output', 'prev', 'chain'],
}

const validateReceipt = new Ajv({allErrors: false}).compile<ReceiptBody & {chain: string; signature?: ReceiptSignature}>(RECEIPT_SCHEMA)

type SchemaNode = {properties?: Record<string, SchemaNode>; items?: SchemaNode}

/**
 * A validated value with every object's keys in the schema's order, which is the order the writer
 * uses: serialized, it is the canonical form docs/receipts.md specifies.
 */
export function canonicalize(value: unknown, node: SchemaNode = RECEIPT_SCHEMA as SchemaNode): unknown {
  if (Array.isArray(value)) return node.items ? value.map((v) => canonicalize(v, node.items)) : value
  if (typeof value !== 'object' || value === null || !node.properties) return value
  const record = value as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(node.properties)) if (key in record) out[key] = canonicalize(record[key], child)
  return out
}

/** Rope overrides in the schema's key order, whatever order a caller built them in. */
export function canonicalRope(rope: RopeOverrides): RopeOverrides {
  return (canonicalize({config: {rope}}) as {config: {rope: RopeOverrides}}).config.rope
}

export type ParsedReceipt = ReceiptBody & {readonly chain: string; readonly signature?: ReceiptSignature}

/** The parsed receipt, or the first structural problem as "path: message". */
export function checkReceiptStructure(value: unknown): ParsedReceipt | string {
  if (validateReceipt(value)) return value
  const e = validateReceipt.errors?.[0]
  if (!e) return 'it is not a receipt'
  const where = e.instancePath || '(top level)'
  const extra = e.keyword === 'additionalProperties' ? ` "${(e.params as {additionalProperty: string}).additionalProperty}"` : ''
  return `${where} ${e.message ?? 'is invalid'}${extra}`
}

import AjvModule from 'ajv'

import {RECEIPT_FORMAT, RECEIPT_VERSION, type ReceiptBody, type ReceiptSignature} from './format.js'

const Ajv = AjvModule as unknown as typeof AjvModule.default

const hex = (bytes: number) => ({type: 'string', pattern: `^[0-9a-f]{${2 * bytes}}$`})
const tokenList = {type: 'array', items: {type: 'integer', minimum: 0, maximum: 2147483647}}
const obj = (properties: Record<string, unknown>) => ({type: 'object', additionalProperties: false, required: Object.keys(properties), properties})

/**
 * The structure of a version-1 receipt. Ranges of the settings are not checked here: the replay
 * passes them through the same validation the CLI uses (sampling options, context options).
 */
const validateReceipt = new Ajv({allErrors: false}).compile<ReceiptBody & {chain: string; signature?: ReceiptSignature}>({
  ...obj({
    format: {const: RECEIPT_FORMAT},
    version: {const: RECEIPT_VERSION},
    created: obj({started: {type: 'string'}, finished: {type: 'string'}}),
    model: obj({
      architecture: {type: 'string'},
      files: {type: 'array', minItems: 1, items: obj({name: {type: 'string'}, bytes: {type: 'integer', minimum: 0}, sha256: hex(32)})},
    }),
    engine: obj({
      runner: {type: 'string'},
      abi: {type: 'integer'},
      addonSha256: hex(32),
      packageSha256: hex(32),
      cpuLevel: {type: 'string'},
      cpu: {type: 'string'},
      platform: {type: 'string'},
    }),
    profile: obj({name: {type: 'string'}, version: {type: 'integer'}}),
    config: obj({
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
    }),
    prompt: obj({text: {type: 'string'}, tokens: tokenList}),
    output: obj({tokens: tokenList, logprobs: {type: 'array', items: {type: 'number'}}, text: {type: 'string'}, bytes: {type: 'string', pattern: '^([0-9a-f]{2})*$'}, finishReason: {enum: ['length', 'eos', 'aborted', 'stopped', 'context']}}),
    prev: {anyOf: [{type: 'null'}, hex(32)]},
    chain: hex(32),
    signature: obj({algorithm: {const: 'ed25519'}, publicKey: hex(32), value: hex(64)}),
  }),
  required: ['format', 'version', 'created', 'model', 'engine', 'profile', 'config', 'prompt', 'output', 'prev', 'chain'],
})

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

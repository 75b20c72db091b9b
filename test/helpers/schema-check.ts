/** Judge hand-written documents against a compiled JSON Schema grammar (for the compiler's unit tests). */
import assert from 'node:assert/strict'
import {compileJsonSchema, type JsonSchemaOptions, SchemaRefusal} from '../../src/lib/grammar/json-schema/index.js'
import {recognizes} from './ir-recognize.js'

export function check(schema: unknown, accept: string[], reject: string[], options?: JsonSchemaOptions): void {
  const g = compileJsonSchema(schema, options)
  for (const t of accept) assert.equal(recognizes(g, t), true, `should accept ${t} for ${JSON.stringify(schema)}`)
  for (const t of reject) assert.equal(recognizes(g, t), false, `should reject ${t} for ${JSON.stringify(schema)}`)
}

/** The schema is refused, naming `keyword` (and `pointer` when given). */
export function refuses(schema: unknown, keyword: string, pointer?: string): void {
  assert.throws(
    () => compileJsonSchema(schema),
    (e: unknown) => e instanceof SchemaRefusal && e.keyword === keyword && (pointer === undefined || e.pointer === pointer),
    `should refuse ${keyword} for ${JSON.stringify(schema)}`,
  )
}

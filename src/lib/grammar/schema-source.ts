/**
 * A JSON Schema given as text (a file, a flag, a request field re-serialised) to its grammar: the
 * text must be JSON (refused with where it breaks), and the compiler's refusals (keyword and JSON
 * pointer) become GRAMMAR_REFUSED with the same message.
 */
import {grammarRefused} from './constraint.js'
import type {Grammar} from './ir.js'
import {compileJsonSchema, SchemaRefusal} from './json-schema/index.js'

export function compileSchemaText(text: string): Grammar {
  let schema: unknown
  try {
    schema = JSON.parse(text)
  } catch (error) {
    throw grammarRefused('the JSON schema', `it is not JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  try {
    return compileJsonSchema(schema)
  } catch (error) {
    if (error instanceof SchemaRefusal) throw grammarRefused('the JSON schema', error.message)
    throw error
  }
}

/**
 * From what a user gave (a schema's JSON text, a GBNF file's text, JSON mode) to a Constraint: the
 * one entry point the CLI, the servers and receipt replay share, so that the same source always
 * compiles the same way and hashes the same.
 */
import {type Constraint, type ConstraintKind, constraintOf, grammarRefused, LABEL} from './constraint.js'
import {parseGbnf} from './gbnf.js'
import type {Grammar} from './ir.js'
import {jsonModeGrammar} from './json-mode.js'
import {type PiecesSpec, piecesGrammar} from './pieces.js'
import {compileSchemaText} from './schema-source.js'

export type ConstraintSource =
  | {readonly kind: 'json-schema'; readonly text: string}
  | {readonly kind: 'gbnf'; readonly text: string}
  /** A PiecesSpec as JSON text (./pieces.ts). */
  | {readonly kind: 'tool-calls'; readonly text: string}
  | {readonly kind: 'json-object' | 'json-value'}

/** The most characters a constraint's source may have (a schema or grammar far past any real one). */
export const MAX_CONSTRAINT_SOURCE = 4 * 1024 * 1024

const FRONT_ENDS: Readonly<Record<ConstraintKind, (text: string) => Grammar>> = {
  'json-schema': compileSchemaText,
  gbnf: (text) => parseGbnf(text),
  'json-object': () => jsonModeGrammar('object'),
  'json-value': () => jsonModeGrammar('value'),
  'tool-calls': (text) => piecesGrammar(JSON.parse(text) as PiecesSpec),
}

export function compileConstraint(source: ConstraintSource): Constraint {
  const started = performance.now()
  const text = 'text' in source ? source.text : ''
  if (text.length > MAX_CONSTRAINT_SOURCE) {
    throw grammarRefused(LABEL[source.kind], `${text.length} characters is over the limit of ${MAX_CONSTRAINT_SOURCE}`)
  }
  return constraintOf(source.kind, text, FRONT_ENDS[source.kind](text), started)
}

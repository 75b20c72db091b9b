/**
 * A constraint: what a user asked the output to be (a JSON Schema, a GBNF grammar, or JSON mode),
 * compiled once to the matcher's program, with the text and hash that receipts record so `runner
 * verify` can replay a constrained run. Every front end's refusal becomes one RunnerError shape
 * (GRAMMAR_REFUSED, exit 2) whose message names the keyword and JSON pointer, or the line and
 * column, so the CLI and the servers can answer it in their own error shapes.
 */
import {createHash} from 'node:crypto'

import {ExitCode, RunnerError} from '../errors.js'
import type {Grammar} from './ir.js'
import {GrammarError, lowerGrammar} from './lower.js'

/** `tool-calls`: a call syntax with each function's arguments schema (./pieces.ts, built by src/lib/tools). */
export type ConstraintKind = 'json-schema' | 'gbnf' | 'json-object' | 'json-value' | 'tool-calls'

export interface Constraint {
  readonly kind: ConstraintKind
  /** The source as given (schema JSON, grammar text); JSON mode: empty. */
  readonly text: string
  /** sha256 of `${kind}\n${text}`: one value identifies what constrained a run. */
  readonly sha256: string
  readonly program: Int32Array
  /** Milliseconds compiling (front end and lowering). */
  readonly compileMs: number
}

export function constraintHash(kind: ConstraintKind, text: string): string {
  return createHash('sha256').update(`${kind}\n${text}`).digest('hex')
}

/** A refusal of a constraint's source, for every front end. */
export function grammarRefused(what: string, message: string): RunnerError {
  return new RunnerError('GRAMMAR_REFUSED', `${what}: ${message}`, ExitCode.usage)
}

/** Lower a front end's grammar into a constraint; refusals of lowering become GRAMMAR_REFUSED. */
export function constraintOf(kind: ConstraintKind, text: string, grammar: Grammar, started: number): Constraint {
  try {
    const {program} = lowerGrammar(grammar)
    return {kind, text, sha256: constraintHash(kind, text), program, compileMs: performance.now() - started}
  } catch (error) {
    if (error instanceof GrammarError) throw grammarRefused(LABEL[kind], error.message)
    throw error
  }
}

export const LABEL: Readonly<Record<ConstraintKind, string>> = {
  'json-schema': 'the JSON schema',
  gbnf: 'the grammar',
  'json-object': 'JSON mode',
  'json-value': 'JSON mode',
  'tool-calls': 'the tool-call grammar',
}

/**
 * The engine's copy of each constraint's program, kept for the constraints used lately: a server
 * answering many requests with one schema validates its program once. Keyed by the constraint's
 * hash (the same source compiles to the same program).
 */
import {NativeGrammar} from '../engine/index.js'
import type {Constraint} from '../grammar/index.js'

const KEEP = 32
const recent = new Map<string, NativeGrammar>()

export function nativeGrammarOf(constraint: Constraint): NativeGrammar {
  let g = recent.get(constraint.sha256)
  if (g) {
    recent.delete(constraint.sha256)
  } else {
    g = NativeGrammar.create(constraint.program)
    if (recent.size >= KEEP) recent.delete(recent.keys().next().value!)
  }
  recent.set(constraint.sha256, g)
  return g
}

/**
 * The engine's copy of each constraint's program, kept for the constraints used lately: a server
 * answering many requests with one schema validates its program once. Keyed by the constraint's
 * hash (the same source compiles to the same program).
 */
import {NativeGrammar} from '../engine/index.js'
import type {Constraint} from '../grammar/index.js'
import {RecentCache} from '../util/index.js'

const recent = new RecentCache<string, NativeGrammar>(32)

export function nativeGrammarOf(constraint: Constraint): NativeGrammar {
  return recent.get(constraint.sha256, () => NativeGrammar.create(constraint.program))
}

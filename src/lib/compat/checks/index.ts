/**
 * Every check class the matrix knows, in the order a row runs them (load first: the others build on
 * it). Adding a class is a new file in this folder and a line here; the roster schema, the report and
 * the docs table follow from this list.
 */
import type {CheckClass} from '../types.js'
import {chatSmoke} from './chat-smoke.js'
import {cpuGpuIdentity} from './cpu-gpu-identity.js'
import {crossEngine} from './cross-engine.js'
import {determinism} from './determinism.js'
import {greedyReference} from './greedy-reference.js'
import {load} from './load.js'
import {quantizeRoundtrip} from './quantize-roundtrip.js'
import {receiptReplay} from './receipt-replay.js'
import {scoreSelfcheck} from './score-selfcheck.js'
import {serveSmoke} from './serve-smoke.js'
import {speed} from './speed.js'
import {structured} from './structured.js'
import {toolCall} from './tool-call.js'

export const CHECK_CLASSES: readonly CheckClass[] = [
  load,
  greedyReference,
  crossEngine,
  scoreSelfcheck,
  determinism,
  chatSmoke,
  serveSmoke,
  toolCall,
  structured,
  receiptReplay,
  quantizeRoundtrip,
  speed,
  cpuGpuIdentity,
]

export function checkClass(name: string): CheckClass | undefined {
  return CHECK_CLASSES.find((c) => c.name === name)
}

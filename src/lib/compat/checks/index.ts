/**
 * Every check class the matrix knows, in the order a row runs them (load first: the others build on
 * it). Adding a class is a new file in this folder and a line here; the roster schema, the report and
 * the docs table follow from this list.
 */
import type {CheckClass} from '../types.js'
import {load} from './load.js'

export const CHECK_CLASSES: readonly CheckClass[] = [load]

export function checkClass(name: string): CheckClass | undefined {
  return CHECK_CLASSES.find((c) => c.name === name)
}

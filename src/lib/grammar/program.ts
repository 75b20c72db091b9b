/**
 * The native matcher's program: the layout of the Int32Array that ./lower.ts writes and
 * native/src/grammar/program.c validates and reads. One description, on both sides of the seam
 * (runner.h "grammar" documents the same layout); bump PROGRAM_VERSION on any change.
 *
 *   header[8]          MAGIC, VERSION, nSets, nRanges, nRules, nAlts, nElems, startRule
 *   setStart[nSets+1]  into ranges (pairs)
 *   ranges[2*nRanges]  lo, hi: inclusive code point ranges, sorted and disjoint within a set
 *   ruleAlt[nRules+1]  into altStart
 *   altStart[nAlts]    element index where each alternative begins; every alternative ends with END
 *   elems[4*nElems]    kind, a, b, c
 */
export const PROGRAM_MAGIC = 0x52475231 // "RGR1"
export const PROGRAM_VERSION = 1
export const PROGRAM_HEADER = 8

/** Element kinds: END closes an alternative; CHARS matches one code point of set a; REF enters rule a;
 * REPEAT enters rule a between b and c times (c = -1: no upper bound). */
export const ElemKind = {END: 0, CHARS: 1, REF: 2, REPEAT: 3} as const
export type ElemKindValue = (typeof ElemKind)[keyof typeof ElemKind]

export interface Elem {
  readonly kind: ElemKindValue
  readonly a: number
  readonly b: number
  readonly c: number
}

/** Public face of constrained decoding's front ends: grammars, their compilation, and constraints. */
export {ANY_CHAR, type CharSet, charSet, complement, union} from './charset.js'
export {type Constraint, type ConstraintKind, constraintHash, constraintOf, grammarRefused} from './constraint.js'
export * as ir from './ir.js'
export type {Expr, Grammar} from './ir.js'
export {compileConstraint, type ConstraintSource, MAX_CONSTRAINT_SOURCE} from './compile.js'
export {GrammarError, lowerGrammar} from './lower.js'
export {GrammarSyntaxError, parseGbnf} from './gbnf.js'
export {jsonModeGrammar} from './json-mode.js'

/**
 * The required fields of a client SDK's response types, read from its TypeScript declarations
 * (the `.d.ts` files the SDK ships, parsed with the TypeScript compiler): the outside definition of
 * what a response must carry, so a test can check that none is missing from what the server sends.
 * `name` is an interface's path, namespaces included: `ChatCompletion.Choice`.
 */
import {readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

import ts from 'typescript'

/** The packages' export maps hide their .d.ts files from require.resolve: read them where npm put them. */
const NODE_MODULES = fileURLToPath(new URL('../../node_modules/', import.meta.url))
const parsed = new Map<string, ts.SourceFile>()

function source(file: string): ts.SourceFile {
  let sf = parsed.get(file)
  if (!sf) {
    const path = NODE_MODULES + file
    sf = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
    parsed.set(file, sf)
  }
  return sf
}

function find(nodes: readonly ts.Statement[], path: readonly string[]): ts.InterfaceDeclaration | undefined {
  const [head, ...rest] = path
  for (const node of nodes) {
    if (rest.length === 0 && ts.isInterfaceDeclaration(node) && node.name.text === head) return node
    if (rest.length > 0 && ts.isModuleDeclaration(node) && node.name.text === head && node.body && ts.isModuleBlock(node.body)) {
      const found = find(node.body.statements, rest)
      if (found) return found
    }
  }
  return undefined
}

/** Property names an interface declares without `?` (its `extends` clauses aside). */
export function requiredFields(file: string, name: string): string[] {
  const decl = find(source(file).statements, name.split('.'))
  if (!decl) throw new Error(`${name} is not declared in ${file}`)
  return decl.members.flatMap((m) =>
    ts.isPropertySignature(m) && !m.questionToken && m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name)) ? [m.name.text] : [],
  )
}

/** The required fields `value` lacks (present with null is fine: the types say which may be null). */
export function missingFields(value: unknown, file: string, name: string): string[] {
  const o = (value ?? {}) as Record<string, unknown>
  return requiredFields(file, name).filter((k) => !(k in o) || o[k] === undefined)
}

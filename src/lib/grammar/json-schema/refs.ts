/**
 * `$ref` resolution inside one document: JSON pointers (`#/$defs/a`), `$id`/`id` base URIs of
 * embedded resources, and plain-name anchors (`$anchor`, or draft 6-7 `$id: "#name"`). Remote
 * documents cannot be fetched while decoding, so a reference outside the document is refused.
 */
import {childPointer, SchemaRefusal} from './refusal.js'

const ROOT_BASE = 'https://runner.invalid/root.json'
/** Keywords whose value is a schema, a list of schemas, or a map of schemas (where `$id`s can hide). */
const SCHEMA_KEYS = [
  'additionalProperties',
  'additionalItems',
  'items',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
]
const LIST_KEYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items']
const MAP_KEYS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']

export interface Located {
  readonly schema: unknown
  readonly pointer: string
}

function resolveUri(ref: string, base: string): string {
  try {
    return new URL(ref, base).href
  } catch {
    return ref
  }
}

export class RefIndex {
  /** pointer → base URI in effect inside that schema object */
  private readonly bases = new Map<string, string>()
  /** resource URI (no fragment) → pointer of its root */
  private readonly resources = new Map<string, string>()
  /** "uri#anchor" → pointer */
  private readonly anchors = new Map<string, string>()

  constructor(
    private readonly root: unknown,
    /** Draft 4-7: `$ref` siblings, `$id` included, are ignored. */
    private readonly legacyRef: boolean | undefined,
  ) {
    this.walk(root, '', ROOT_BASE)
    this.resources.set(ROOT_BASE, '')
  }

  private walk(node: unknown, pointer: string, base: string): void {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return
    const s = node as Record<string, unknown>
    let id = typeof s.$id === 'string' ? s.$id : typeof s.id === 'string' ? s.id : undefined
    // draft 4-7 ignore an $id beside $ref; 2019+ (and an undeclared draft, read as 2020-12) honour it
    if (id !== undefined && !id.startsWith('#') && typeof s.$ref === 'string' && this.legacyRef) id = undefined
    if (id !== undefined) {
      if (id.startsWith('#')) this.anchors.set(base.split('#')[0] + id, pointer)
      else {
        base = resolveUri(id, base).split('#')[0]!
        this.resources.set(base, pointer)
      }
    }
    if (typeof s.$anchor === 'string') this.anchors.set(`${base}#${s.$anchor}`, pointer)
    this.bases.set(pointer, base)
    for (const k of SCHEMA_KEYS) if (k in s && !Array.isArray(s[k])) this.walk(s[k], childPointer(pointer, k), base)
    for (const k of LIST_KEYS)
      if (Array.isArray(s[k])) (s[k] as unknown[]).forEach((x, i) => this.walk(x, childPointer(pointer, k, i), base))
    for (const k of MAP_KEYS) {
      const m = s[k]
      if (typeof m === 'object' && m !== null && !Array.isArray(m))
        for (const [n, x] of Object.entries(m)) this.walk(x, childPointer(pointer, k, n), base)
    }
  }

  /** The base URI for a schema at `pointer` (the nearest indexed ancestor's). */
  baseOf(pointer: string): string {
    for (let p = pointer; ; p = p.slice(0, p.lastIndexOf('/'))) {
      const b = this.bases.get(p)
      if (b !== undefined) return b
      if (p === '') return ROOT_BASE
    }
  }

  /** The schema a JSON pointer (RFC 6901) names, from the document root. */
  at(pointer: string, refPointer: string): Located {
    let node: unknown = this.root
    for (const raw of pointer.split('/').slice(1)) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
      if (typeof node !== 'object' || node === null || !(key in (node as object)))
        throw new SchemaRefusal('$ref', refPointer, `no schema at ${pointer}`)
      node = (node as Record<string, unknown>)[key]
    }
    return {schema: node, pointer}
  }

  /** Resolve the `$ref` value found in the schema at `pointer`. */
  resolve(ref: string, pointer: string): Located {
    const refPointer = childPointer(pointer, '$ref')
    const full = resolveUri(ref, this.baseOf(pointer))
    const hash = full.indexOf('#')
    const uri = hash < 0 ? full : full.slice(0, hash)
    let fragment = hash < 0 ? '' : full.slice(hash + 1)
    try {
      fragment = decodeURIComponent(fragment)
    } catch {
      throw new SchemaRefusal('$ref', refPointer, 'a malformed fragment')
    }
    const rootPointer = this.resources.get(uri)
    if (rootPointer === undefined) throw new SchemaRefusal('$ref', refPointer, `a remote reference ${ref}`)
    if (fragment === '' || fragment.startsWith('/')) return this.at(rootPointer + fragment, refPointer)
    const anchored = this.anchors.get(`${uri}#${fragment}`)
    if (anchored === undefined) throw new SchemaRefusal('$ref', refPointer, `no anchor ${fragment}`)
    return this.at(anchored, refPointer)
  }
}

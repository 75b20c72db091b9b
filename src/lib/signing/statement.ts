/**
 * The in-toto Statement v1 inside a model signature, as model_signing v1.x writes and checks it
 * (its signing.Payload and dsse_payload_to_manifest): one subject, the model's name with the root
 * digest; predicate {serialization, resources}, one resource per file. The root digest is the
 * sha256 of the resources' raw digests concatenated in the order listed (model_signing lists them
 * sorted by path).
 */
import {createHash} from 'node:crypto'

import {refused, unsupported} from './errors.js'
import {HASH_TYPE, PREDICATE_TYPE, type Resource, SERIALIZATION_METHOD, STATEMENT_TYPE} from './format.js'

/** model_signing before v1.0 (a subject per file, no resources): its own verifier keeps a compatibility path; runner does not. */
const PREDICATE_TYPE_V0 = 'https://model_signing/Digests/v0.1'

export interface Statement {
  /** Informative only (model_signing: the model's folder or file name); never checked. */
  readonly subjectName: string
  readonly rootDigest: string
  readonly resources: readonly Resource[]
  readonly allowSymlinks: boolean
  readonly ignorePaths: readonly string[]
}

const HEX64 = /^[0-9a-fA-F]{64}$/

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

/** sha256 over the raw digests of the resources, in order: the subject's digest. */
export function rootDigest(resources: readonly Pick<Resource, 'digest'>[]): string {
  const hash = createHash('sha256')
  for (const r of resources) hash.update(Buffer.from(r.digest, 'hex'))
  return hash.digest('hex')
}

function hex64(v: unknown, field: string): string {
  if (typeof v !== 'string' || !HEX64.test(v)) throw refused(field, 'is not a sha256 digest (64 hex digits)')
  return v.toLowerCase()
}

export function parseStatement(payload: Buffer): Statement {
  const at = (f: string) => `statement.${f}`
  let root: unknown
  try {
    root = JSON.parse(payload.toString('utf8'))
  } catch (error) {
    throw refused('dsseEnvelope.payload', `is not JSON (${(error as Error).message})`, error)
  }
  if (!isObject(root)) throw refused('dsseEnvelope.payload', 'is not a JSON object')
  if (root._type !== STATEMENT_TYPE) throw refused(at('_type'), `must be ${STATEMENT_TYPE}, got ${JSON.stringify(root._type ?? null)}`)
  if (root.predicateType === PREDICATE_TYPE_V0)
    throw unsupported(
      at('predicateType'),
      `${PREDICATE_TYPE_V0} is model_signing's pre-1.0 format; re-sign with model_signing 1.x or runner sign`,
    )
  if (root.predicateType !== PREDICATE_TYPE)
    throw refused(at('predicateType'), `must be ${PREDICATE_TYPE}, got ${JSON.stringify(root.predicateType ?? null)}`)
  const subjects = root.subject
  if (!Array.isArray(subjects) || subjects.length !== 1) throw refused(at('subject'), 'must list exactly one subject (the model)')
  const subject: unknown = subjects[0]
  if (!isObject(subject) || typeof subject.name !== 'string') throw refused(at('subject[0].name'), 'is missing or not a string')
  if (!isObject(subject.digest)) throw refused(at('subject[0].digest'), 'is missing or not an object')
  const declaredRoot = hex64(subject.digest.sha256, at('subject[0].digest.sha256'))

  if (!isObject(root.predicate)) throw refused(at('predicate'), 'is missing or not an object')
  const serialization = root.predicate.serialization
  if (!isObject(serialization)) throw refused(at('predicate.serialization'), 'is missing or not an object')
  if (serialization.method !== SERIALIZATION_METHOD)
    throw unsupported(
      at('predicate.serialization.method'),
      `${JSON.stringify(serialization.method ?? null)} is not supported; runner checks "${SERIALIZATION_METHOD}" (one digest per whole file: model_signing's default)`,
    )
  if (serialization.hash_type !== HASH_TYPE)
    throw unsupported(
      at('predicate.serialization.hash_type'),
      `${JSON.stringify(serialization.hash_type ?? null)} is not supported; runner checks ${HASH_TYPE}`,
    )
  if (typeof serialization.allow_symlinks !== 'boolean')
    throw refused(at('predicate.serialization.allow_symlinks'), 'is missing or not true/false')
  const ignore = serialization.ignore_paths ?? []
  if (!Array.isArray(ignore) || !ignore.every((p) => typeof p === 'string'))
    throw refused(at('predicate.serialization.ignore_paths'), 'is not a list of paths')

  const list = root.predicate.resources
  if (!Array.isArray(list) || list.length === 0) throw refused(at('predicate.resources'), 'must list the model files')
  const seen = new Set<string>()
  const resources = list.map((r: unknown, i): Resource => {
    const f = (k: string) => at(`predicate.resources[${i}]${k}`)
    if (!isObject(r)) throw refused(f(''), 'is not an object')
    if (typeof r.name !== 'string' || r.name === '') throw refused(f('.name'), 'is missing or empty')
    if (seen.has(r.name)) throw refused(f('.name'), 'names a file listed before')
    seen.add(r.name)
    if (r.algorithm !== HASH_TYPE)
      throw unsupported(f('.algorithm'), `${JSON.stringify(r.algorithm ?? null)} is not supported; runner checks ${HASH_TYPE}`)
    return {name: r.name, algorithm: HASH_TYPE, digest: hex64(r.digest, f('.digest'))}
  })
  const computed = rootDigest(resources)
  if (computed !== declaredRoot)
    throw refused(
      at('subject[0].digest.sha256'),
      `is ${declaredRoot} but the listed resources hash to ${computed} (the statement is inconsistent)`,
    )
  return {
    subjectName: subject.name,
    rootDigest: computed,
    resources,
    allowSymlinks: serialization.allow_symlinks,
    ignorePaths: ignore as string[],
  }
}

/** The statement runner sign writes: model_signing's shape, resources sorted by name as model_signing sorts them. */
export function buildStatement(subjectName: string, resources: readonly Resource[]): Buffer {
  // By code point, as Python sorts str (UTF-8 byte order is code point order).
  const sorted = [...resources].sort((a, b) => Buffer.compare(Buffer.from(a.name, 'utf8'), Buffer.from(b.name, 'utf8')))
  const statement = {
    _type: STATEMENT_TYPE,
    subject: [{name: subjectName, digest: {sha256: rootDigest(sorted)}}],
    predicateType: PREDICATE_TYPE,
    predicate: {
      serialization: {method: SERIALIZATION_METHOD, hash_type: HASH_TYPE, allow_symlinks: false},
      resources: sorted.map((r) => ({name: r.name, algorithm: r.algorithm, digest: r.digest})),
    },
  }
  return Buffer.from(JSON.stringify(statement, null, 2), 'utf8')
}

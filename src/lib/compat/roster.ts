/**
 * The roster: which models a release promises and which checks apply to each. A JSON or YAML file,
 * validated with ajv against ROSTER_SCHEMA (built from the check classes' own parameter lists, so an
 * unknown check or parameter is refused by name), paths resolved against the roster's folder.
 */
import {createHash} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {dirname, resolve} from 'node:path'

import {Ajv} from 'ajv'
import {parse as parseYaml} from 'yaml'

import {ExitCode, RunnerError} from '../errors.js'
import {printable} from '../util/index.js'
import {CHECK_CLASSES} from './checks/index.js'
import type {CheckParams, RosterRow} from './types.js'

export const ROSTER_FORMAT = 'runner.compat-roster'
export const ROSTER_VERSION = 1

const paramsSchema = (name: string) => {
  const c = CHECK_CLASSES.find((k) => k.name === name)!
  return {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(
      Object.entries(c.params).map(([k, p]) => [
        k,
        {type: p.type, description: p.description, ...(p.minimum !== undefined ? {minimum: p.minimum} : {})},
      ]),
    ),
  }
}

/** The roster's JSON Schema (`runner compat-matrix --roster-schema` prints it). */
export function rosterSchema() {
  const names = CHECK_CLASSES.map((c) => c.name)
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://runner.local/schemas/compat-roster-1.json',
    title: 'runner compat-matrix roster',
    type: 'object',
    additionalProperties: false,
    required: ['format', 'version', 'rows'],
    properties: {
      format: {const: ROSTER_FORMAT},
      version: {const: ROSTER_VERSION},
      description: {type: 'string'},
      rows: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['id', 'path', 'sha256', 'architecture', 'type', 'checks'],
          properties: {
            id: {type: 'string', pattern: '^[A-Za-z0-9._-]+$'},
            path: {type: 'string', minLength: 1, description: 'the model file, relative to the roster'},
            sha256: {type: 'string', pattern: '^[0-9a-f]{64}$'},
            url: {type: 'string', description: 'where the file can be downloaded (recorded; compat-matrix does not download)'},
            architecture: {type: 'string'},
            type: {type: 'string', description: 'the weight type holding most of the bytes (F32 only when nothing else is there)'},
            reference: {type: 'string', description: "llama.cpp's reference outputs for this model, relative to the roster"},
            checks: {
              anyOf: [
                {type: 'array', minItems: 1, uniqueItems: true, items: {enum: names}},
                {
                  type: 'object',
                  minProperties: 1,
                  additionalProperties: false,
                  properties: Object.fromEntries(names.map((n) => [n, paramsSchema(n)])),
                },
              ],
            },
            expected_failures: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['check', 'reason'],
                properties: {check: {enum: names}, reason: {type: 'string', minLength: 1}},
              },
            },
          },
        },
      },
    },
  } as const
}

interface RosterFile {
  format: string
  version: number
  rows: Array<{
    id: string
    path: string
    sha256: string
    url?: string
    architecture: string
    type: string
    reference?: string
    checks: string[] | Record<string, CheckParams>
    expected_failures?: Array<{check: string; reason: string}>
  }>
}

let validator: ReturnType<Ajv['compile']> | undefined

export interface Roster {
  readonly path: string
  readonly sha256: string
  readonly rows: readonly RosterRow[]
}

const rosterError = (path: string, why: string) => new RunnerError('ROSTER_INVALID', `roster ${printable(path)}: ${why}`, ExitCode.usage)

/** Read, validate and resolve a roster; refuses (exit 2) a file that is not one, naming where. */
export function loadRoster(path: string): Roster {
  let bytes: Buffer
  try {
    bytes = readFileSync(path)
  } catch (error) {
    throw rosterError(path, (error as Error).message)
  }
  let doc: unknown
  try {
    doc = /\.ya?ml$/i.test(path) ? parseYaml(bytes.toString('utf8')) : JSON.parse(bytes.toString('utf8'))
  } catch (error) {
    throw rosterError(path, `not ${/\.ya?ml$/i.test(path) ? 'YAML' : 'JSON'}: ${(error as Error).message}`)
  }
  validator ??= new Ajv({allErrors: true, strict: false}).compile(rosterSchema())
  if (!validator(doc)) {
    const errors = (validator.errors ?? [])
      .slice(0, 5)
      .map(
        (e) =>
          `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
      )
    // YAML reads an unquoted hex string of digits (or one like 12e34...) as a number.
    const hint = /\.ya?ml$/i.test(path) && errors.some((e) => e.includes('must be string')) ? ' (in YAML, quote values such as sha256)' : ''
    throw rosterError(path, errors.join('; ') + hint)
  }
  const file = doc as RosterFile
  const base = dirname(resolve(path))
  const seen = new Set<string>()
  const rows = file.rows.map((r): RosterRow => {
    if (seen.has(r.id)) throw rosterError(path, `row id ${r.id} appears twice`)
    seen.add(r.id)
    const checks = Array.isArray(r.checks) ? Object.fromEntries(r.checks.map((c) => [c, {}])) : r.checks
    const expectedFailures: Record<string, string> = {}
    for (const e of r.expected_failures ?? []) {
      if (!(e.check in checks)) throw rosterError(path, `row ${r.id}: expected failure of ${e.check}, which the row does not run`)
      if (e.check in expectedFailures) throw rosterError(path, `row ${r.id}: two expected failures of ${e.check}; give one reason`)
      expectedFailures[e.check] = e.reason
    }
    return {
      id: r.id,
      path: resolve(base, r.path),
      rosterPath: r.path,
      sha256: r.sha256,
      ...(r.url ? {url: r.url} : {}),
      architecture: r.architecture,
      type: r.type,
      checks,
      expectedFailures,
      ...(r.reference ? {reference: resolve(base, r.reference)} : {}),
    }
  })
  return {path, sha256: createHash('sha256').update(bytes).digest('hex'), rows}
}

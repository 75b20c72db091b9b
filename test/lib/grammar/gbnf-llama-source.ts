/**
 * llama.cpp's own source as the outside anchor for the GBNF tests: its grammars/ folder and the
 * grammar test files, read at test time from the release bundle node-llama-cpp ships (we copy none of
 * it into the repository). A bare clone of the bundle takes about a second; files are read with
 * `git show HEAD:path`. When git or the bundle is missing the tests skip with `LLAMA_SOURCE_SKIP`.
 *
 * Also a small extractor for the C++ test files: a tokenizer for string literals (plain and raw
 * `R"""(...)"""`), identifiers and punctuation, and a splitter for the arguments of calls such as
 * `test_grammar("desc", R"""(...)""", {"pass", ...}, {"fail", ...})`.
 */
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {REPO_ROOT} from '../../helpers/shared.js'

const BUNDLE = join(REPO_ROOT, 'node_modules/node-llama-cpp/llama/gitRelease.bundle')

export interface LlamaSource {
  read(path: string): string
  list(dir: string): string[]
  /** The commit the bundle holds, for messages. */
  readonly commit: string
}

let cached: LlamaSource | string | undefined

/** The llama.cpp source, or a string saying why it is unavailable. */
export function llamaSource(): LlamaSource | string {
  if (cached !== undefined) return cached
  if (!existsSync(BUNDLE)) return (cached = `llama.cpp source bundle not found at ${BUNDLE}`)
  const dir = mkdtempSync(join(tmpdir(), 'llama-src-'))
  process.on('exit', () => rmSync(dir, {recursive: true, force: true}))
  const git = (...args: string[]): string => {
    const r = spawnSync('git', args, {encoding: 'utf8', maxBuffer: 64 << 20})
    if (r.error || r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.error?.message ?? r.stderr}`)
    return r.stdout
  }
  try {
    git('clone', '-q', '--bare', BUNDLE, dir)
    const commit = git('-C', dir, 'rev-parse', 'HEAD').trim()
    cached = {
      commit,
      read: (path) => git('-C', dir, 'show', `HEAD:${path}`),
      list: (d) => git('-C', dir, 'ls-tree', '--name-only', 'HEAD', `${d}/`).split('\n').filter(Boolean),
    }
  } catch (e) {
    cached = `cannot read the llama.cpp bundle with git: ${(e as Error).message}`
  }
  return cached
}

export type Token = {kind: 'string'; value: string} | {kind: 'word'; value: string} | {kind: 'punct'; value: string}

const CPP_ESCAPES: Readonly<Record<string, string>> = {n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", '0': '\0', a: '\x07'}

/** Tokens of C++ source: comments dropped, string literals decoded (UTF-8 source, so JS strings). */
export function tokenizeCpp(src: string): Token[] {
  const out: Token[] = []
  let i = 0
  while (i < src.length) {
    const c = src[i]!
    if (/\s/.test(c)) i++
    else if (src.startsWith('//', i)) i = src.indexOf('\n', i) === -1 ? src.length : src.indexOf('\n', i)
    else if (src.startsWith('/*', i)) i = src.indexOf('*/', i) + 2
    else if (/R"([^(\s]*)\(/y.test(src.slice(i, i + 20)) && c === 'R') {
      const delim = /^R"([^(\s]*)\(/.exec(src.slice(i))![1]!
      const start = i + 3 + delim.length
      const end = src.indexOf(`)${delim}"`, start)
      out.push({kind: 'string', value: src.slice(start, end)})
      i = end + delim.length + 2
    } else if (c === '"') {
      let value = ''
      i++
      while (src[i] !== '"') {
        if (src[i] === '\\') {
          const e = src[i + 1]!
          if (e === 'x') {
            const hex = /^[0-9a-fA-F]+/.exec(src.slice(i + 2))![0]
            value += String.fromCharCode(parseInt(hex, 16))
            i += 2 + hex.length
          } else if (e === 'u' || e === 'U') {
            const n = e === 'u' ? 4 : 8
            value += String.fromCodePoint(parseInt(src.slice(i + 2, i + 2 + n), 16))
            i += 2 + n
          } else if (e in CPP_ESCAPES) {
            value += CPP_ESCAPES[e]
            i += 2
          } else throw new Error(`unknown C++ escape \\${e}`)
        } else value += src[i++]
      }
      i++
      out.push({kind: 'string', value})
    } else if (/[A-Za-z_0-9]/.test(c)) {
      const word = /^[A-Za-z_0-9]+/.exec(src.slice(i))![0]
      out.push({kind: 'word', value: word})
      i += word.length
    } else {
      out.push({kind: 'punct', value: c})
      i++
    }
  }
  return out
}

/** Split tokens at top-level commas (depth counted over (), {}, []). */
export function splitArgs(tokens: readonly Token[]): Token[][] {
  const args: Token[][] = [[]]
  let depth = 0
  for (const t of tokens) {
    if (t.kind === 'punct' && '({['.includes(t.value)) depth++
    if (t.kind === 'punct' && ')}]'.includes(t.value)) depth--
    if (depth === 0 && t.kind === 'punct' && t.value === ',') args.push([])
    else args[args.length - 1]!.push(t)
  }
  if (args[args.length - 1]!.length === 0) args.pop()
  return args
}

/** The argument token lists of every call `name(...)` (the tokens between its parentheses). */
export function callsOf(tokens: readonly Token[], name: string): Token[][][] {
  const calls: Token[][][] = []
  for (let i = 0; i + 1 < tokens.length; i++) {
    const t = tokens[i]!
    if (t.kind !== 'word' || t.value !== name || tokens[i + 1]!.value !== '(') continue
    let depth = 0
    let j = i + 1
    for (; j < tokens.length; j++) {
      const v = tokens[j]!
      if (v.kind === 'punct' && '({['.includes(v.value)) depth++
      if (v.kind === 'punct' && ')}]'.includes(v.value) && --depth === 0) break
    }
    calls.push(splitArgs(tokens.slice(i + 2, j)))
  }
  return calls
}

/** The string an argument denotes when it is only adjacent or `+`-joined literals; else undefined. */
export function stringOf(arg: readonly Token[]): string | undefined {
  let s = ''
  for (const t of arg) {
    if (t.kind === 'string') s += t.value
    else if (!(t.kind === 'punct' && t.value === '+')) return undefined
  }
  return arg.length > 0 ? s : undefined
}

/** The elements of a `{a, b, c}` argument; undefined where one is not a plain string. */
export function stringListOf(arg: readonly Token[]): (string | undefined)[] {
  if (arg[0]?.value !== '{' || arg[arg.length - 1]?.value !== '}') throw new Error('not a {...} list')
  return splitArgs(arg.slice(1, -1)).map(stringOf)
}

/** The source text of function `name`'s body, for picking out the grammars one test function uses. */
export function functionBody(src: string, name: string): string {
  const start = src.indexOf(`static void ${name}(`)
  if (start < 0) throw new Error(`no function ${name}`)
  const next = src.indexOf('\nstatic ', start + 1)
  return src.slice(start, next < 0 ? undefined : next)
}

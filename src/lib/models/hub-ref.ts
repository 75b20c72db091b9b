import {ExitCode, RunnerError} from '../errors.js'
import {printable} from '../text/index.js'

/**
 * A model on the Hugging Face Hub, as llama.cpp's -hf takes one: `OWNER/REPO[:QUANT]` (the file
 * chosen by its quantization tag, Q4_K_M by default) or `OWNER/REPO/PATH/FILE.gguf` (that file),
 * each optionally written `hf.co/…`, `huggingface.co/…` or as an https://huggingface.co/ address.
 */
export interface HubRef {
  /** OWNER/REPO. */
  readonly repo: string
  /** The quantization tag (`Q4_K_M`), when the file is chosen by tag. */
  readonly tag?: string
  /** The file's path in the repository, when one is named. */
  readonly file?: string
  /** The name the model is known by once pulled: `OWNER/REPO:TAG`, `OWNER/REPO` or `OWNER/REPO/FILE.gguf`. */
  readonly name: string
}

const PREFIXES = [/^https?:\/\/(www\.)?(huggingface\.co|hf\.co)\//i, /^(hf|huggingface)\.co\//i, /^hf:\/\//i]
/** The Hub's own rule for a user or repository name. */
const NAME_PART = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$/
const TAG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
/** A path segment of a file in a repository: no dot names, no separators or controls. */
// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const PATH_PART = /^(?!\.{1,2}$)[^\\/\u0000-\u001F\u007F]{1,255}$/

/** True when the text is written as a Hub address (`hf.co/…`, `https://huggingface.co/…`): it can only mean a Hub model. */
export function hasHubPrefix(text: string): boolean {
  return PREFIXES.some((p) => p.test(text.trim()))
}

/** The text without a Hub prefix, and whether it had one (then it must parse as a Hub reference). */
function stripPrefix(text: string): {rest: string; prefixed: boolean} {
  for (const p of PREFIXES) if (p.test(text)) return {rest: text.replace(p, ''), prefixed: true}
  return {rest: text, prefixed: false}
}

/** Parse a Hub reference; undefined when the text does not have the shape of one (a file path, a short name). */
export function parseHubRef(text: string): HubRef | undefined {
  const {rest, prefixed} = stripPrefix(text.trim())
  // https://huggingface.co/OWNER/REPO/resolve/main/FILE.gguf and …/blob/main/… name a file at a revision.
  const web = /^([^/]+)\/([^/]+)\/(?:resolve|blob)\/main\/(.+)$/.exec(rest)
  const parts = web ? [web[1]!, web[2]!, ...web[3]!.split('/')] : rest.split('/')
  const fail = (why: string): undefined => {
    if (prefixed) throw new RunnerError('HUB_BAD_REFERENCE', `${JSON.stringify(printable(text, {max: 120}))}: ${why}`, ExitCode.usage)
    return undefined
  }
  if (parts.length < 2) return fail('a Hub model is OWNER/REPO[:QUANT] or OWNER/REPO/FILE.gguf')
  const [owner, repoAndTag] = parts as [string, string]
  if (parts.length === 2) {
    const [repo, tag, extra] = repoAndTag.split(':')
    if (extra !== undefined) return fail('more than one :QUANT')
    if (!NAME_PART.test(owner) || !NAME_PART.test(repo ?? '')) return fail('OWNER and REPO are letters, digits, . _ and -')
    if (tag !== undefined && !TAG.test(tag))
      return fail(`the quantization tag ${JSON.stringify(printable(tag, {max: 40}))} is not a tag (Q4_K_M, Q8_0…)`)
    return {repo: `${owner}/${repo}`, tag, name: tag === undefined ? `${owner}/${repo}` : `${owner}/${repo}:${tag}`}
  }
  const path = parts.slice(2)
  if (!NAME_PART.test(owner) || !NAME_PART.test(repoAndTag)) return fail('OWNER and REPO are letters, digits, . _ and -')
  if (!path.every((p) => PATH_PART.test(p))) return fail('the file path has an empty, dot or control-character segment')
  if (!/\.gguf$/i.test(path.at(-1)!)) return fail('the file must be a .gguf file')
  const file = path.join('/')
  return {repo: `${owner}/${repoAndTag}`, file, name: `${owner}/${repoAndTag}/${file}`}
}

import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../util/index.js'

/** An adapter to apply, as `--lora FILE[:SCALE]` gives it (llama.cpp's --lora / --lora-scaled). */
export interface LoraSpec {
  readonly path: string
  /** The user's scale (default 1); the deltas are multiplied by scale * alpha / rank (alpha 0: scale). */
  readonly scale: number
}

const SCALE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/

/**
 * `FILE[:SCALE]`. The scale is what follows the last colon when that is a decimal number; a path
 * holding colons is taken whole otherwise (`a:b.gguf`), and `FILE:` or `FILE:x` is refused by name
 * rather than read as a file called that.
 */
export function parseLoraSpec(text: string, flag = '--lora'): LoraSpec {
  const at = text.lastIndexOf(':')
  if (at < 0) return {path: text, scale: 1}
  const tail = text.slice(at + 1)
  if (SCALE.test(tail)) {
    const scale = Number(tail)
    if (!Number.isFinite(scale))
      throw new RunnerError('LORA_BAD_SCALE', `${flag} ${quoted(text)}: the scale ${tail} is not a finite number`, ExitCode.usage)
    if (at === 0) throw new RunnerError('LORA_BAD_SCALE', `${flag} ${quoted(text)}: no file before the scale`, ExitCode.usage)
    return {path: text.slice(0, at), scale}
  }
  if (tail === '' || !/[./\\]/.test(tail))
    throw new RunnerError(
      'LORA_BAD_SCALE',
      `${flag} ${quoted(text)}: ${tail === '' ? 'nothing' : quoted(tail)} after the colon is not a scale; give FILE or FILE:SCALE (e.g. adapter.gguf:0.5)`,
      ExitCode.usage,
    )
  return {path: text, scale: 1}
}

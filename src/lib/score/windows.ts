/**
 * The window scheme of llama.cpp's perplexity tool (llama-perplexity), so that our figures and its
 * figures measure the same thing:
 *   tokens = [BOS] + tokenize(corpus); window c covers tokens[c*stride, c*stride + ctx) with its
 *   first token replaced by BOS, evaluated from an empty cache at positions 0..ctx-1; the logits at
 *   positions first..ctx-2 score tokens first+1..ctx-1, with first = ctx/2 (the first half of each
 *   window is context only). Trailing tokens that do not fill a window are not scored.
 * With the default stride (= ctx) the windows do not overlap and the count is floor(n / ctx), as in
 * llama-perplexity.
 */
export interface WindowScheme {
  readonly ctx: number
  readonly stride: number
  /** Position of the first logit row that scores (ctx / 2, rounded down). */
  readonly first: number
  /** Start offset of every window. */
  readonly starts: readonly number[]
  /** Tokens scored per window: ctx - 1 - first. */
  readonly scoredPerWindow: number
}

export function windowScheme(nTokens: number, ctx: number, stride = ctx): WindowScheme {
  const first = Math.floor(ctx / 2)
  const starts: number[] = []
  for (let s = 0; s + ctx <= nTokens; s += stride) starts.push(s)
  return {ctx, stride, first, starts, scoredPerWindow: ctx - 1 - first}
}

/** The tokens one window evaluates: its slice with the first token replaced by BOS (when there is one). */
export function windowTokens(tokens: readonly number[], start: number, ctx: number, bos: number | undefined): number[] {
  const w = tokens.slice(start, start + ctx)
  if (bos !== undefined) w[0] = bos
  return w
}

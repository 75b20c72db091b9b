/**
 * llama.cpp's n_keep, as its --keep flag and its server's `n_keep` field count it: N prompt tokens
 * after the BOS token (which a shift always keeps), or the whole prompt for -1 or an N past it. The
 * engine then keeps at most n_ctx - 4 positions (Context.shiftKeep).
 */
export function keptTokens(prompt: readonly number[], keep: number, bos: number | undefined): number {
  const hasBos = bos !== undefined && prompt[0] === bos
  if (keep < 0 || keep + (hasBos ? 1 : 0) > prompt.length) return prompt.length
  return keep + (hasBos ? 1 : 0)
}

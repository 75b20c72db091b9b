/**
 * Special tokens found in the text before tokenization (llama.cpp tokenizer_st_partition). Each
 * special token, longest first, splits every remaining text fragment at each of its occurrences.
 * Control and unknown tokens take part only when the caller asks for special-token parsing;
 * user-defined tokens always do (as in HF tokenizers, whose added tokens are always split out).
 */
import {ATTR_HIDDEN, TokenAttr} from './token-attr.js'
import type {Vocab} from './vocab.js'

export type Fragment = {readonly text: string} | {readonly token: number}

// C isspace() in the "C" locale, which llama.cpp uses for lstrip/rstrip around a special token.
const LEADING_SPACE = /^[ \t\n\v\f\r]+/
const TRAILING_SPACE = /[ \t\n\v\f\r]+$/

export function partitionSpecial(text: string, vocab: Vocab, parseSpecial: boolean): Fragment[] {
  let fragments: Fragment[] = text.length > 0 ? [{text}] : []
  for (const id of vocab.specialTokens) {
    const attr = vocab.attrs[id]!
    if (!parseSpecial && attr & ATTR_HIDDEN) continue
    const needle = vocab.tokens[id]!
    if (!fragments.some((f) => 'text' in f && f.text.includes(needle))) continue
    const next: Fragment[] = []
    for (const f of fragments) {
      if (!('text' in f)) {
        next.push(f)
        continue
      }
      let rest = f.text
      for (;;) {
        const at = rest.indexOf(needle)
        if (at < 0) {
          if (rest.length > 0) next.push({text: rest})
          break
        }
        let left = rest.slice(0, at)
        if (attr & TokenAttr.lstrip) left = left.replace(TRAILING_SPACE, '')
        if (left.length > 0) next.push({text: left})
        next.push({token: id})
        rest = rest.slice(at + needle.length)
        if (attr & TokenAttr.rstrip) rest = rest.replace(LEADING_SPACE, '')
        if (rest.length === 0) break
      }
    }
    fragments = next
  }
  return fragments
}

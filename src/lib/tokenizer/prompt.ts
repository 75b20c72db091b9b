import type {Tokenizer} from './tokenizer.js'

export interface PromptEncoding {
  /** Add the model's BOS when its vocabulary asks for one. */
  readonly addBos: boolean
  /** Read special-token text (<|im_start|>, <s>, ...) as those tokens; a BOS written in the text is then not added twice. */
  readonly parseSpecial: boolean
}

/**
 * The tokens of a prompt. Plain text: llama_tokenize(text, add_special = addBos, parse_special =
 * false). With special tokens parsed, a BOS the text already starts with is not doubled (llama.cpp
 * would add a second one and warn). Used by run, chat, serve and receipt replay alike.
 */
export function encodePrompt(tokenizer: Tokenizer, text: string, options: PromptEncoding): number[] {
  if (!options.parseSpecial) return tokenizer.encode(text, {addSpecial: options.addBos, parseSpecial: false})
  const ids = tokenizer.encode(text, {addSpecial: false, parseSpecial: true})
  if (options.addBos && tokenizer.addBos && tokenizer.bos !== undefined && ids[0] !== tokenizer.bos) ids.unshift(tokenizer.bos)
  return ids
}

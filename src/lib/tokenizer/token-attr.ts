/**
 * Token types as GGUF stores them (`tokenizer.ggml.token_type`, llama.cpp's llama_token_type) and the
 * attribute bits llama.cpp derives from them (llama_token_attr). The tokenizer works on attributes:
 * llama.cpp adds bits after loading (an end-of-turn token found by its text becomes CONTROL even if the
 * file says NORMAL), so the type alone does not decide how a token is matched or rendered.
 */
export const TokenType = {
  undefined: 0,
  normal: 1,
  unknown: 2,
  control: 3,
  userDefined: 4,
  unused: 5,
  byte: 6,
} as const

export type TokenTypeValue = (typeof TokenType)[keyof typeof TokenType]

export const TokenAttr = {
  undefined: 0,
  unknown: 1 << 0,
  unused: 1 << 1,
  normal: 1 << 2,
  control: 1 << 3,
  userDefined: 1 << 4,
  byte: 1 << 5,
  normalized: 1 << 6,
  lstrip: 1 << 7,
  rstrip: 1 << 8,
  singleWord: 1 << 9,
} as const

/** token_type value → attribute bits (llama_vocab::impl::load). */
export const ATTR_OF_TYPE: readonly number[] = [
  TokenAttr.undefined, // 0 undefined
  TokenAttr.normal, // 1 normal
  TokenAttr.unknown, // 2 unknown
  TokenAttr.control, // 3 control
  TokenAttr.userDefined, // 4 user defined
  TokenAttr.unused, // 5 unused
  TokenAttr.byte, // 6 byte
]

/** Tokens that llama.cpp renders as nothing unless asked to (`special` / unparse_special). */
export const ATTR_HIDDEN = TokenAttr.unknown | TokenAttr.control
/** Tokens that are matched in the text before the tokenizer runs (tokenizer_st_partition). */
export const ATTR_SPECIAL = TokenAttr.control | TokenAttr.userDefined | TokenAttr.unknown

/**
 * Which tokens are special and why: the metadata keys that name them, llama.cpp's defaults per
 * tokenizer model, and the text-based rules llama.cpp applies after loading (llama_vocab::impl::load).
 * These are tables on purpose: llama.cpp grows them one model family at a time.
 */

export type SpecialSlot =
  'bos' | 'eos' | 'eot' | 'eom' | 'unk' | 'sep' | 'pad' | 'mask' | 'fimPre' | 'fimSuf' | 'fimMid' | 'fimPad' | 'fimRep' | 'fimSep'

export const SPECIAL_SLOTS: readonly SpecialSlot[] = [
  'bos',
  'eos',
  'eot',
  'eom',
  'unk',
  'sep',
  'pad',
  'mask',
  'fimPre',
  'fimSuf',
  'fimMid',
  'fimPad',
  'fimRep',
  'fimSep',
]

/** Metadata key → slot, in llama.cpp's order (the deprecated FIM keys come last and win). */
export const SPECIAL_ID_KEYS: ReadonlyArray<readonly [string, SpecialSlot]> = [
  ['tokenizer.ggml.bos_token_id', 'bos'],
  ['tokenizer.ggml.eos_token_id', 'eos'],
  ['tokenizer.ggml.eot_token_id', 'eot'],
  ['tokenizer.ggml.eom_token_id', 'eom'],
  ['tokenizer.ggml.unknown_token_id', 'unk'],
  // llama.cpp's spelling.
  ['tokenizer.ggml.seperator_token_id', 'sep'],
  ['tokenizer.ggml.padding_token_id', 'pad'],
  ['tokenizer.ggml.mask_token_id', 'mask'],
  ['tokenizer.ggml.fim_pre_token_id', 'fimPre'],
  ['tokenizer.ggml.fim_suf_token_id', 'fimSuf'],
  ['tokenizer.ggml.fim_mid_token_id', 'fimMid'],
  ['tokenizer.ggml.fim_pad_token_id', 'fimPad'],
  ['tokenizer.ggml.fim_rep_token_id', 'fimRep'],
  ['tokenizer.ggml.fim_sep_token_id', 'fimSep'],
  ['tokenizer.ggml.prefix_token_id', 'fimPre'],
  ['tokenizer.ggml.suffix_token_id', 'fimSuf'],
  ['tokenizer.ggml.middle_token_id', 'fimMid'],
]

/**
 * Values of a special-token id key that mean "not set". Converters write 0xFFFFFFFF (stories260K's
 * separator and padding ids); llama.cpp logs "bad special token ... using default id" and keeps the
 * default. -1 is the same value written as a signed integer.
 */
export const ABSENT_IDS: ReadonlySet<number> = new Set([0xffffffff, -1])

/**
 * Slots llama.cpp fills from the token text when the file leaves them unset; the token found also
 * becomes a control token. llama.cpp walks its text → id hash map and takes the first candidate it
 * meets, so with two candidates (Qwen has <|im_end|> and <|endoftext|>, Llama 3 <|eot_id|> and
 * <|end_of_text|>) the pick depends on hash order. We take the first text in the order listed here
 * (llama.cpp's own order), which gives what llama.cpp v0.5.0 reports for Llama 3 (<|eot_id|>) and
 * Qwen 3 (<|im_end|>).
 */
export const DETECT_BY_TEXT: ReadonlyArray<readonly [SpecialSlot, readonly string[]]> = [
  [
    'eot',
    [
      '<|eot_id|>',
      '<|im_end|>',
      '<|end|>',
      '<end_of_turn>',
      '<|endoftext|>',
      '<|end_of_text|>',
      '<EOT>',
      '_<EOT>',
      '[EOT]',
      '<｜end▁of▁sentence｜>',
      '<end_of_utterance>',
    ],
  ],
  ['eom', ['<|eom_id|>']],
  ['fimPre', ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>']],
  ['fimSuf', ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>']],
  ['fimMid', ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>']],
  ['fimPad', ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]']],
  ['fimRep', ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>']],
  ['fimSep', ['<|file_sep|>']],
]

/** Tokens that end generation because of their text (llama.cpp special_eog_ids); they also become control tokens. */
export const EOG_TEXTS: ReadonlySet<string> = new Set([
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<|return|>',
  '<|call|>',
  '<|flush|>',
  '<|calls|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '</s>',
  '<|eom_id|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]',
  '[EOS]',
  '<|end_of_text|>',
  '<end_of_utterance>',
  '<eos>',
  '<turn|>',
  '<|tool_response>',
  '<｜end▁of▁sentence｜>',
  '[e~[',
])

/** FIM slots whose tokens llama.cpp also counts as end of generation. */
export const EOG_FIM_SLOTS: readonly SpecialSlot[] = ['fimPad', 'fimRep', 'fimSep']

/** gpt-oss: llama.cpp always renders these, whatever the file says (attribute forced to user-defined). */
export const ALWAYS_RENDERED_TEXTS: ReadonlySet<string> = new Set(['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>'])

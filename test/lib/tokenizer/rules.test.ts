// The tokenizer rules on small synthetic vocabularies, each rule as llama.cpp's llama-vocab.cpp states
// it (llm_tokenizer_spm, llm_tokenizer_bpe, tokenizer_st_partition, token_to_piece, detokenize), plus
// the stream decoder on stories260K's byte tokens (its "🙂" is 243, 162, 156, 133 in ../shared/reference).
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'

import {readGgufModel} from '../../../src/lib/gguf/index.js'
import {createTokenizer, TokenizerError, TokenizerErrorCode, TokenType} from '../../../src/lib/tokenizer/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'
import {bool, bpeVocab, byteAlphabet, spmVocab, u32, withKeys} from './vocab-builder.js'

describe('SentencePiece (llm_tokenizer_spm)', () => {
  // Ids: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, then these from 259.
  const pieces = [
    {text: '▁', score: -5}, // 259
    {text: 'a', score: -5}, // 260
    {text: 'b', score: -5}, // 261
    {text: 'c', score: -5}, // 262
    {text: 'ab', score: -1}, // 263
    {text: 'bc', score: -1}, // 264
    {text: '▁a', score: -2}, // 265
    {text: 'x', score: -5}, // 266
    {text: 'xx', score: -3}, // 267
  ]
  const noPrefix = [bool('tokenizer.ggml.add_space_prefix', false)]

  it('merges the highest-scoring pair first, the leftmost on a tie', () => {
    const tok = createTokenizer(spmVocab(pieces, {extra: noPrefix}))
    assert.deepEqual(tok.encode('abc'), [263, 262]) // ab and bc tie at -1: leftmost wins
    const bcFirst = createTokenizer(
      spmVocab(
        pieces.map((p) => (p.text === 'bc' ? {...p, score: -0.5} : p)),
        {extra: noPrefix},
      ),
    )
    assert.deepEqual(bcFirst.encode('abc'), [260, 264])
    assert.deepEqual(tok.encode('xxx'), [267, 266]) // overlapping pairs: leftmost
  })

  it('adds the prefix space by default and turns spaces into ▁', () => {
    const tok = createTokenizer(spmVocab(pieces))
    assert.equal(tok.addSpacePrefix, true)
    assert.deepEqual(tok.encode('a'), [265])
    assert.deepEqual(tok.encode('a a'), [265, 265])
    assert.deepEqual(tok.encode(' '), [259, 259])
    assert.equal(tok.decode(tok.encode('a a')), 'a a')
  })

  it('spells characters outside the vocabulary with byte tokens <0xXX> (id = byte + 3 here)', () => {
    const tok = createTokenizer(spmVocab(pieces, {extra: noPrefix}))
    assert.deepEqual(tok.encode('é'), [0xc3 + 3, 0xa9 + 3])
    assert.equal(tok.decode(tok.encode('aé🙂')), 'aé🙂')
  })

  it('writes <unk> for a character when the vocabulary has no byte tokens', () => {
    const tok = createTokenizer(spmVocab(pieces, {bytes: false, extra: noPrefix}))
    assert.deepEqual(tok.encode('aéb'), [4, 0, 5]) // ids shift down by 256 without byte tokens
  })

  it('parses control tokens only when asked, and adds the prefix space after each one', () => {
    const tok = createTokenizer(spmVocab(pieces))
    assert.deepEqual(tok.encode('<s>a', {parseSpecial: true}), [1, 265])
    assert.notEqual(tok.encode('<s>a')[0], 1)
    assert.deepEqual(tok.encode('a', {addSpecial: true}), [1, 265])
  })

  it('reads the prefix-space flag and add_bos/add_eos from the metadata', () => {
    const tok = createTokenizer(
      spmVocab(pieces, {extra: [bool('tokenizer.ggml.add_bos_token', false), bool('tokenizer.ggml.add_eos_token', true)]}),
    )
    assert.equal(tok.addBos, false)
    assert.equal(tok.addEos, true)
    assert.deepEqual(tok.encode('a', {addSpecial: true}), [265, 2])
    // remove_special drops the trailing EOS the model adds.
    assert.equal(tok.decode([265, 2], {removeSpecial: true, unparseSpecial: true}), 'a')
    assert.equal(tok.decode([265, 2], {unparseSpecial: true}), 'a</s>')
  })

  it('strips one space from the first piece only, even when that piece renders as nothing', () => {
    const tok = createTokenizer(spmVocab(pieces))
    assert.equal(tok.decode([265, 265]), 'a a')
    assert.equal(tok.decode([1, 265]), ' a')
    assert.equal(tok.decode([1, 265], {unparseSpecial: true}), '<s> a')
  })
})

describe('byte-level BPE (llm_tokenizer_bpe)', () => {
  const alphabet = byteAlphabet()
  const id = (t: string, extra: readonly string[]) => {
    const i = [...alphabet, ...extra].indexOf(t)
    assert.ok(i >= 0, t)
    return i
  }
  const extra = ['ab', 'abc', 'Ġa', 'aa', 'xyz', '€x']
  const merges = ['a b', 'ab c', 'Ġ a', 'a a']

  it('merges the lowest-ranked pair first, the leftmost on a tie', () => {
    const tok = createTokenizer(bpeVocab(extra, merges))
    assert.deepEqual(tok.encode('abc'), [id('abc', extra)])
    assert.deepEqual(tok.encode('aaa'), [id('aa', extra), id('a', extra)])
    assert.deepEqual(tok.encode(' a b'), [id('Ġa', extra), id('Ġ', extra), id('b', extra)])
    assert.equal(tok.decode(tok.encode(' a b é€')), ' a b é€')
  })

  it('emits a word that is a token whole when the pre-tokenizer ignores merges (llama3)', () => {
    assert.deepEqual(
      createTokenizer(bpeVocab(extra, merges, {pre: 'gpt-2'})).encode('xyz'),
      ['x', 'y', 'z'].map((t) => id(t, extra)),
    )
    assert.deepEqual(createTokenizer(bpeVocab(extra, merges, {pre: 'llama-bpe'})).encode('xyz'), [id('xyz', extra)])
  })

  it('uses llama.cpp defaults: BOS/EOS 11 (if the vocabulary has 12 tokens), no BOS added unless the pre-tokenizer says so', () => {
    const gpt2 = createTokenizer(bpeVocab(extra, merges))
    assert.equal(gpt2.bos, 11)
    assert.equal(gpt2.eos, 11)
    assert.equal(gpt2.addBos, false)
    assert.equal(createTokenizer(bpeVocab(extra, merges, {pre: 'llama-bpe'})).addBos, true)
    // chatglm has no default BOS.
    assert.equal(createTokenizer(bpeVocab(extra, merges, {pre: 'chatglm-bpe'})).bos, undefined)
    // No pre-tokenizer key: llama.cpp's "default".
    assert.equal(createTokenizer(withKeys(bpeVocab(extra, merges), [['tokenizer.ggml.pre', undefined]])).pre, undefined)
  })

  it('renders a character outside the byte alphabet as llama.cpp does: [UNK_BYTE_0x<hex><token>]', () => {
    const tok = createTokenizer(bpeVocab(extra, merges))
    assert.equal(tok.decode([id('€x', extra)]), '[UNK_BYTE_0xe282ac€x]x')
  })

  it('refuses text the vocabulary cannot spell rather than dropping bytes as llama.cpp does', () => {
    const tok = createTokenizer(bpeVocab(['a', 'b'], [], {alphabet: false}))
    assert.deepEqual(tok.encode('ab'), [0, 1])
    assert.throws(
      () => tok.encode('ac'),
      (e: unknown) => e instanceof TokenizerError && e.code === TokenizerErrorCode.unencodable,
    )
  })

  it('splits user-defined tokens out of the text always, control tokens only with parseSpecial', () => {
    const tokens = [...extra, '<|ctl|>', '<user>']
    const types = [...extra.map(() => TokenType.normal), TokenType.control, TokenType.userDefined]
    const tok = createTokenizer(bpeVocab(tokens, merges, {types}))
    const ctl = id('<|ctl|>', tokens)
    const user = id('<user>', tokens)
    assert.ok(tok.encode('a<user>b').includes(user))
    assert.ok(!tok.encode('a<|ctl|>b').includes(ctl))
    assert.ok(tok.encode('a<|ctl|>b', {parseSpecial: true}).includes(ctl))
    // Control tokens render as nothing unless unparseSpecial; user-defined ones always render.
    assert.equal(tok.decode([ctl, user]), '<user>')
    assert.equal(tok.decode([ctl, user], {unparseSpecial: true}), '<|ctl|><user>')
  })

  it('finds end-of-turn and end-of-generation tokens by their text, as llama.cpp does', () => {
    const tokens = [...extra, '<|endoftext|>', '<|im_end|>', '<|fim_pad|>']
    const tok = createTokenizer(
      bpeVocab(tokens, merges, {pre: 'qwen2', extra: [u32('tokenizer.ggml.eos_token_id', id('<|endoftext|>', tokens))]}),
    )
    assert.equal(tok.eot, id('<|im_end|>', tokens)) // <|im_end|> comes before <|endoftext|> in llama.cpp's list
    assert.deepEqual(
      [...tok.eogTokens].sort((a, b) => a - b),
      ['<|endoftext|>', '<|im_end|>', '<|fim_pad|>'].map((t) => id(t, tokens)),
    )
    // They become control tokens even though the file says normal.
    assert.ok(tok.isControl(id('<|im_end|>', tokens)))
    assert.equal(tok.special.fimPad, id('<|fim_pad|>', tokens))
  })

  it('keeps a lone surrogate as U+FFFD, the way UTF-8 encoding writes it', () => {
    const tok = createTokenizer(bpeVocab(extra, merges))
    assert.deepEqual(tok.encode('a\ud800b'), tok.encode('a\ufffdb'))
  })
})

describe('stream decoder', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const stories = () => createTokenizer(readGgufModel(sharedPath('models', 'stories260K.gguf')))

  it('holds the byte tokens of "🙂" (243, 162, 156, 133) until the character is complete', () => {
    const tok = stories()
    const d = tok.createStreamDecoder()
    assert.deepEqual(
      [243, 162, 156, 133].map((id) => d.push(id)),
      ['', '', '', '🙂'],
    )
    assert.equal(d.end(), '')
  })

  it('interleaves text and held bytes: the concatenation equals decode', () => {
    const tok = stories()
    const ids = tok.encode('héllo 🙂 world 🙂🙂 end')
    const d = tok.createStreamDecoder({stripLeadingSpace: true})
    const parts = ids.map((id) => d.push(id))
    assert.equal(parts.join('') + d.end(), tok.decode(ids))
    assert.ok(
      parts.every((p) => !/[\ud800-\udfff]/.test(p.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))),
      'no lone surrogates',
    )
    // Only the three pieces that complete an emoji carry it.
    assert.equal(parts.filter((p) => p.includes('🙂')).length, 3)
  })

  it('emits U+FFFD as soon as bytes can never be valid, and for an unfinished character only at end()', () => {
    const tok = stories()
    const byte = (b: number) => b + 3
    const d = tok.createStreamDecoder()
    assert.equal(d.push(byte(0x80)), '\ufffd') // a stray continuation byte
    assert.equal(d.push(byte(0xf0)), '') // may still become a character
    assert.equal(d.push(tok.encode('a')[0]!), '\ufffd a') // it did not
    assert.equal(d.push(byte(0xe2)), '')
    assert.equal(d.end(), '\ufffd')
    // The decoder starts afresh after end().
    assert.equal(d.push(byte(0x41)), 'A')
  })

  it('renders control tokens only when asked', () => {
    const tok = stories()
    assert.equal(tok.createStreamDecoder().push(1), '')
    assert.equal(tok.createStreamDecoder({unparseSpecial: true}).push(1), '<s>')
  })

  it('refuses an id outside the vocabulary', () => {
    const tok = stories()
    assert.throws(
      () => tok.createStreamDecoder().push(512),
      (e: unknown) => e instanceof TokenizerError && e.code === TokenizerErrorCode.badTokenId && e.exitCode === 1,
    )
  })
})

describe('pieces', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  it('gives each token its text, piece and bytes', () => {
    const tok = createTokenizer(readGgufModel(sharedPath('models', 'stories260K.gguf')))
    assert.equal(tok.tokenText(410), '▁')
    assert.equal(tok.piece(410), ' ')
    assert.equal(tok.piece(1), '<s>')
    assert.equal(tok.piece(1, {special: false}), '')
    assert.deepEqual([...tok.pieceBytes(243)], [0xf0])
    assert.equal(tok.tokenId('<s>'), 1)
    assert.equal(tok.tokenId('no such token'), undefined)
  })
})

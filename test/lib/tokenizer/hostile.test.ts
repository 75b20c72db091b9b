// Hostile and unsupported vocabulary metadata: every case is refused with a stable code that names
// the key (and the value), never a crash and never a silent repair. The one exception is llama.cpp's
// own rule for special ids written as 0xFFFFFFFF (stories260K's separator and padding ids): absent.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, it} from 'node:test'

import {ExitCode, RunnerError} from '../../../src/lib/errors.js'
import {type GgufKv, GgufValueType, isGgufArray, readGgufModel, writeGguf} from '../../../src/lib/gguf/index.js'
import {createTokenizer, TokenizerError, TokenizerErrorCode} from '../../../src/lib/tokenizer/index.js'
import {bool, bpeVocab, f32s, i32, i32s, spmVocab, str, strings, u32, withKeys} from './vocab-builder.js'

const spm = () => spmVocab([{text: '▁a'}, {text: 'a'}])
function arrayOf(kvs: ReadonlyMap<string, GgufKv>, key: string) {
  const v = kvs.get(key)?.value
  assert.ok(v !== undefined && typeof v === 'object' && isGgufArray(v))
  return v.items
}
const tokenList = (kvs: ReadonlyMap<string, GgufKv>) => arrayOf(kvs, 'tokenizer.ggml.tokens') as readonly string[]
const bpe = () => bpeVocab(['ab'], ['a b'])

/** Expect a refusal: a RunnerError with this code and exit code whose message mentions every `mentions`. */
function refuses(kvs: ReadonlyMap<string, GgufKv>, code: string, exitCode: number, ...mentions: Array<string | RegExp>): void {
  assert.throws(
    () => createTokenizer(kvs),
    (e: unknown) => {
      assert.ok(e instanceof RunnerError, `a RunnerError, got ${String(e)}`)
      assert.equal(e.code, code, e.message)
      assert.equal(e.exitCode, exitCode, e.message)
      for (const m of mentions) {
        if (typeof m === 'string') assert.ok(e.message.includes(m), `"${e.message}" mentions ${m}`)
        else assert.match(e.message, m)
      }
      return true
    },
  )
}

describe('tokenizer model and pre-tokenizer', () => {
  for (const [model, what] of [
    ['bert', 'WordPiece'],
    ['t5', 'Unigram'],
    ['rwkv', 'RWKV'],
    ['plamo2', 'PLaMo'],
    ['no_vocab', 'no vocabulary'],
    ['sentencepiece', 'unknown tokenizer model'],
  ] as const) {
    it(`refuses tokenizer.ggml.model '${model}' by name (exit 5)`, () => {
      refuses(
        withKeys(spm(), [str('tokenizer.ggml.model', model)]),
        TokenizerErrorCode.unsupported,
        ExitCode.unsupported,
        'tokenizer.ggml.model',
        `'${model}'`,
        what,
      )
    })
  }

  it('refuses a missing tokenizer.ggml.model', () => {
    refuses(withKeys(spm(), [['tokenizer.ggml.model', undefined]]), 'GGUF_META_MISSING', ExitCode.invalidModel, 'tokenizer.ggml.model')
  })

  for (const pre of ['gpt2', 'deepseek-llm', 'tekken', 'qwen35', 'bogus']) {
    it(`refuses tokenizer.ggml.pre '${pre}' by name (exit 5)`, () => {
      refuses(
        withKeys(bpe(), [str('tokenizer.ggml.pre', pre)]),
        TokenizerErrorCode.unsupported,
        ExitCode.unsupported,
        'tokenizer.ggml.pre',
        `'${pre}'`,
        "'llama-bpe'",
      )
    })
  }

  it('refuses a pre-tokenizer name that is not a string', () => {
    refuses(withKeys(bpe(), [u32('tokenizer.ggml.pre', 3)]), 'GGUF_META_TYPE', ExitCode.invalidModel, 'tokenizer.ggml.pre')
  })
})

describe('vocabulary arrays', () => {
  it('refuses an empty vocabulary', () => {
    refuses(
      withKeys(spm(), [strings('tokenizer.ggml.tokens', []), f32s('tokenizer.ggml.scores', []), i32s('tokenizer.ggml.token_type', [])]),
      TokenizerErrorCode.badVocab,
      ExitCode.invalidModel,
      'tokenizer.ggml.tokens',
      'empty',
    )
  })

  it('refuses a missing or mistyped token list', () => {
    refuses(withKeys(spm(), [['tokenizer.ggml.tokens', undefined]]), 'GGUF_META_MISSING', ExitCode.invalidModel, 'tokenizer.ggml.tokens')
    refuses(
      withKeys(spm(), [i32s('tokenizer.ggml.tokens', [1, 2, 3])]),
      'GGUF_META_TYPE',
      ExitCode.invalidModel,
      'tokenizer.ggml.tokens',
      'string',
    )
    refuses(withKeys(spm(), [str('tokenizer.ggml.tokens', 'abc')]), 'GGUF_META_TYPE', ExitCode.invalidModel, 'tokenizer.ggml.tokens')
  })

  it('refuses duplicate tokens, naming both ids', () => {
    const kvs = spmVocab([{text: 'a'}, {text: 'a'}])
    refuses(kvs, TokenizerErrorCode.badVocab, ExitCode.invalidModel, 'tokenizer.ggml.tokens', 'duplicate', '"a"', '259', '260')
  })

  it('refuses scores or token types of another length', () => {
    const n = tokenList(spm()).length
    refuses(
      withKeys(spm(), [f32s('tokenizer.ggml.scores', [0, 1])]),
      TokenizerErrorCode.badVocab,
      ExitCode.invalidModel,
      'tokenizer.ggml.scores',
      'has 2 items',
      `${n}`,
    )
    refuses(
      withKeys(spm(), [i32s('tokenizer.ggml.token_type', [1])]),
      TokenizerErrorCode.badVocab,
      ExitCode.invalidModel,
      'tokenizer.ggml.token_type',
      'has 1 items',
    )
  })

  it('refuses scores and token types of the wrong element type', () => {
    const n = tokenList(spm()).length
    const names = [...tokenList(spm())]
    refuses(
      withKeys(spm(), [strings('tokenizer.ggml.scores', names)]),
      TokenizerErrorCode.badVocab,
      ExitCode.invalidModel,
      'tokenizer.ggml.scores',
      'string',
    )
    const f64: GgufKv = {
      key: 'tokenizer.ggml.scores',
      type: GgufValueType.ARRAY,
      value: {itemType: GgufValueType.FLOAT64, items: new Float64Array(n)},
    }
    refuses(withKeys(spm(), [f64]), TokenizerErrorCode.badVocab, ExitCode.invalidModel, 'tokenizer.ggml.scores', 'f64')
    refuses(
      withKeys(spm(), [f32s('tokenizer.ggml.token_type', new Array<number>(n).fill(1))]),
      'GGUF_META_TYPE',
      ExitCode.invalidModel,
      'tokenizer.ggml.token_type',
    )
    refuses(
      withKeys(spm(), [f32s('tokenizer.ggml.scores', new Array<number>(n).fill(Number.NaN))]),
      TokenizerErrorCode.badVocab,
      ExitCode.invalidModel,
      'tokenizer.ggml.scores',
      'NaN',
    )
  })

  it('accepts i32 scores, as llama.cpp does', () => {
    const n = tokenList(spm()).length
    assert.equal(createTokenizer(withKeys(spm(), [i32s('tokenizer.ggml.scores', new Array<number>(n).fill(0))])).vocabSize, n)
  })

  it('refuses token types outside 0..6 and byte tokens not spelled <0xXX>', () => {
    const types = arrayOf(spm(), 'tokenizer.ggml.token_type') as Int32Array
    for (const bad of [7, -1]) {
      const t = Array.from(types)
      t[259] = bad
      refuses(
        withKeys(spm(), [i32s('tokenizer.ggml.token_type', t)]),
        TokenizerErrorCode.badVocab,
        ExitCode.invalidModel,
        'tokenizer.ggml.token_type',
        `token 259 has type ${bad}`,
      )
    }
    const t = Array.from(types)
    t[259] = 6
    refuses(
      withKeys(spm(), [i32s('tokenizer.ggml.token_type', t)]),
      TokenizerErrorCode.badVocab,
      ExitCode.invalidModel,
      'tokenizer.ggml.token_type',
      '"▁a"',
      '<0xXX>',
    )
  })

  it('keeps llama.cpp\'s rewrite of an empty token to "[EMPTY_<id>]" (it can never match text)', () => {
    const tok = createTokenizer(spmVocab([{text: 'a'}, {text: ''}]))
    assert.equal(tok.tokenText(260), '[EMPTY_260]')
    refuses(spmVocab([{text: '[EMPTY_260]'}, {text: ''}]), TokenizerErrorCode.badVocab, ExitCode.invalidModel, 'duplicate', '[EMPTY_260]')
  })
})

describe('special token ids', () => {
  const n = () => tokenList(spm()).length

  for (const key of [
    'tokenizer.ggml.bos_token_id',
    'tokenizer.ggml.eos_token_id',
    'tokenizer.ggml.unknown_token_id',
    'tokenizer.ggml.eot_token_id',
    'tokenizer.ggml.eom_token_id',
    'tokenizer.ggml.seperator_token_id',
    'tokenizer.ggml.padding_token_id',
    'tokenizer.ggml.mask_token_id',
    'tokenizer.ggml.fim_pre_token_id',
    'tokenizer.ggml.fim_pad_token_id',
  ]) {
    it(`refuses ${key} outside the vocabulary`, () => {
      refuses(
        withKeys(spm(), [u32(key, n())]),
        TokenizerErrorCode.badSpecialToken,
        ExitCode.invalidModel,
        key,
        `${n()}`,
        'outside the vocabulary',
      )
      refuses(withKeys(spm(), [i32(key, -2)]), TokenizerErrorCode.badSpecialToken, ExitCode.invalidModel, key, '-2')
    })
  }

  it('reads 0xFFFFFFFF and -1 as "not set" and keeps llama.cpp\'s default (stories260K\'s separator/padding ids)', () => {
    const tok = createTokenizer(
      withKeys(spm(), [
        u32('tokenizer.ggml.seperator_token_id', 0xffffffff),
        u32('tokenizer.ggml.padding_token_id', 0xffffffff),
        i32('tokenizer.ggml.bos_token_id', -1),
        u32('tokenizer.ggml.eos_token_id', 0xffffffff),
      ]),
    )
    assert.equal(tok.special.sep, undefined)
    assert.equal(tok.special.pad, undefined)
    assert.equal(tok.bos, 1) // SentencePiece default
    assert.equal(tok.eos, 2)
  })

  it('refuses a special id that is not an integer', () => {
    refuses(
      withKeys(spm(), [str('tokenizer.ggml.bos_token_id', '1')]),
      'GGUF_META_TYPE',
      ExitCode.invalidModel,
      'tokenizer.ggml.bos_token_id',
    )
    refuses(
      withKeys(spm(), [f32s('tokenizer.ggml.eos_token_id', [2])]),
      'GGUF_META_TYPE',
      ExitCode.invalidModel,
      'tokenizer.ggml.eos_token_id',
    )
  })

  it('refuses add_bos/add_eos without the token to add, and flags that are not bools', () => {
    // A 258-token BPE vocabulary has a default BOS (11); one of 5 tokens has none.
    const tiny = bpeVocab(['a', 'b', 'c', 'd', 'e'], ['a b'], {alphabet: false})
    refuses(
      withKeys(tiny, [bool('tokenizer.ggml.add_bos_token', true)]),
      TokenizerErrorCode.badSpecialToken,
      ExitCode.invalidModel,
      'tokenizer.ggml.add_bos_token',
      'bos_token_id',
    )
    refuses(
      withKeys(tiny, [bool('tokenizer.ggml.add_eos_token', true)]),
      TokenizerErrorCode.badSpecialToken,
      ExitCode.invalidModel,
      'tokenizer.ggml.add_eos_token',
      'eos_token_id',
    )
    refuses(
      withKeys(spm(), [u32('tokenizer.ggml.add_bos_token', 1)]),
      'GGUF_META_TYPE',
      ExitCode.invalidModel,
      'tokenizer.ggml.add_bos_token',
    )
    refuses(
      withKeys(spm(), [str('tokenizer.ggml.add_space_prefix', 'yes')]),
      'GGUF_META_TYPE',
      ExitCode.invalidModel,
      'tokenizer.ggml.add_space_prefix',
    )
  })

  it('refuses a Phi-3-named model without the tokens llama.cpp looks up for it', () => {
    refuses(
      withKeys(spm(), [str('general.name', 'Phi-3-mini')]),
      TokenizerErrorCode.badVocab,
      ExitCode.invalidModel,
      'general.name',
      '<|endoftext|>',
    )
  })
})

describe('BPE merges', () => {
  it('refuses a gpt2 vocabulary without merges', () => {
    refuses(
      withKeys(bpe(), [['tokenizer.ggml.merges', undefined]]),
      TokenizerErrorCode.badMerges,
      ExitCode.invalidModel,
      'tokenizer.ggml.merges',
      'missing',
    )
  })

  it('refuses merges that are not strings', () => {
    refuses(withKeys(bpe(), [i32s('tokenizer.ggml.merges', [1])]), 'GGUF_META_TYPE', ExitCode.invalidModel, 'tokenizer.ggml.merges')
  })

  for (const line of ['ab', 'a ', ' ', '']) {
    it(`refuses the merge line ${JSON.stringify(line)}, naming its index`, () => {
      refuses(
        withKeys(bpe(), [strings('tokenizer.ggml.merges', ['a b', line])]),
        TokenizerErrorCode.badMerges,
        ExitCode.invalidModel,
        'tokenizer.ggml.merges',
        'line 1',
        JSON.stringify(line),
      )
    })
  }

  it('accepts a line whose left part starts with a space (llama.cpp splits at the first space after the first character)', () => {
    assert.equal(createTokenizer(withKeys(bpe(), [strings('tokenizer.ggml.merges', ['a b', '  x'])])).model, 'gpt2')
  })
})

describe('decode input', () => {
  it('refuses ids outside the vocabulary, negative or fractional, naming the position', () => {
    const tok = createTokenizer(spm())
    for (const bad of [tok.vocabSize, -1, 1.5, Number.NaN]) {
      assert.throws(
        () => tok.decode([1, bad]),
        (e: unknown) =>
          e instanceof TokenizerError &&
          e.code === TokenizerErrorCode.badTokenId &&
          e.field === 'ids[1]' &&
          e.exitCode === ExitCode.failure,
      )
    }
    assert.throws(() => tok.piece(tok.vocabSize), TokenizerError)
    assert.throws(() => tok.tokenText(-1), TokenizerError)
  })
})

describe('refusals from a file name the file and the byte offset of the key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-tok-hostile-'))
  after(() => rmSync(dir, {recursive: true, force: true}))

  it('points at tokenizer.ggml.bos_token_id in the file', async () => {
    const path = join(dir, 'bad-bos.gguf')
    await writeGguf(path, {kvs: [...withKeys(spm(), [u32('tokenizer.ggml.bos_token_id', 99999)]).values()], tensors: []})
    const model = readGgufModel(path)
    const offset = model.shards[0]!.kvOffsets.get('tokenizer.ggml.bos_token_id')
    assert.ok(offset !== undefined)
    assert.throws(
      () => createTokenizer(model),
      (e: unknown) =>
        e instanceof TokenizerError &&
        e.code === TokenizerErrorCode.badSpecialToken &&
        e.message.includes(path) &&
        e.message.includes(`tokenizer.ggml.bos_token_id at byte ${offset}`) &&
        e.message.includes('99999'),
    )
  })
})

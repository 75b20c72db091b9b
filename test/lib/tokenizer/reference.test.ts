// Outside fact: llama.cpp's own tokenizations (llama_tokenize / llama_detokenize through
// node-llama-cpp 3.22.1, llama.cpp v0.5.0) of stories260K's SentencePiece vocabulary, recorded in
// ../shared/reference/*.json. Every fixture JSON is checked on its own file's metadata.
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {describe, it} from 'node:test'

import {readGgufModel} from '../../../src/lib/gguf/index.js'
import {createTokenizer, type Tokenizer} from '../../../src/lib/tokenizer/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

interface TokenizationCase {
  text: string
  ids: number[]
  ids_with_bos: number[]
  detok: string
  detok_with_bos: string
  detok_with_bos_special: string
}
interface GreedyCase {
  prompt: string
  prompt_ids: number[]
  ids: number[]
  full_text: string
  full_text_utf8_hex: string
}
interface Reference {
  model: {file: string}
  vocab: {bos: number; eos: number; add_bos: boolean; add_eos: boolean}
  tokenization: TokenizationCase[]
  greedy: GreedyCase[]
  teacher_forced: {ids: number[]}
  perplexity?: {token_ids?: number[]} | null
}
interface Inputs {
  tokenize_strings: string[]
  greedy_prompts: string[]
  teacher_forced_text: string
  teacher_forced_tokens: number
  perplexity_corpus: string
}

const referenceFiles = hasShared()
  ? readdirSync(sharedPath('reference'))
      .filter((f) => f.endsWith('.json') && f !== 'inputs.json')
      .sort()
  : []
const read = <T>(...parts: string[]): T => JSON.parse(readFileSync(sharedPath(...parts), 'utf8')) as T

function tokenizerFor(ref: Reference): Tokenizer {
  // model.file is relative to the steering repo root, whose shared/ is our ../shared.
  return createTokenizer(readGgufModel(sharedPath(...ref.model.file.replace(/^shared\//, '').split('/'))))
}

function stream(tok: Tokenizer, ids: readonly number[], stripLeadingSpace: boolean): string {
  const d = tok.createStreamDecoder({stripLeadingSpace})
  return ids.map((id) => d.push(id)).join('') + d.end()
}

describe('llama.cpp reference tokenizations (../shared/reference)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let total = 0

  for (const file of referenceFiles) {
    describe(file, () => {
      const ref = read<Reference>('reference', file)
      const inputs = read<Inputs>('reference', 'inputs.json')
      const tok = tokenizerFor(ref)

      it('reads BOS/EOS and add_bos/add_eos from the metadata as llama.cpp does', () => {
        assert.equal(tok.model, 'llama')
        assert.equal(tok.bos, ref.vocab.bos)
        assert.equal(tok.eos, ref.vocab.eos)
        assert.equal(tok.addBos, ref.vocab.add_bos)
        assert.equal(tok.addEos, ref.vocab.add_eos)
      })

      it('tokenization[]: ids, ids_with_bos, detok, detok_with_bos, detok_with_bos_special', () => {
        assert.deepEqual(
          ref.tokenization.map((c) => c.text),
          inputs.tokenize_strings,
        )
        for (const c of ref.tokenization) {
          const what = JSON.stringify(c.text)
          assert.deepEqual(tok.encode(c.text), c.ids, `ids of ${what}`)
          assert.deepEqual(tok.encode(c.text, {addSpecial: true}), c.ids_with_bos, `ids_with_bos of ${what}`)
          assert.equal(tok.decode(c.ids), c.detok, `detok of ${what}`)
          assert.equal(tok.decode(c.ids_with_bos), c.detok_with_bos, `detok_with_bos of ${what}`)
          assert.equal(tok.decode(c.ids_with_bos, {unparseSpecial: true}), c.detok_with_bos_special, `detok_with_bos_special of ${what}`)
          // remove_special drops the BOS the model adds, and llama.cpp then skips the space strip too
          // (llama_vocab::impl::detokenize sets remove_space = false), so the text equals detok_with_bos.
          assert.equal(tok.decode(c.ids_with_bos, {removeSpecial: true}), c.detok_with_bos, `detok_with_bos of ${what} with remove_special`)
          total += 6
        }
      })

      it('greedy[]: prompt_ids = [BOS] + tokenize(prompt); full_text = detokenize(prompt_ids + ids)', () => {
        assert.deepEqual(
          ref.greedy.map((g) => g.prompt),
          inputs.greedy_prompts,
        )
        for (const g of ref.greedy) {
          assert.deepEqual(tok.encode(g.prompt, {addSpecial: true}), g.prompt_ids, `prompt_ids of ${JSON.stringify(g.prompt)}`)
          const all = [...g.prompt_ids, ...g.ids]
          assert.equal(Buffer.from(tok.decodeBytes(all)).toString('hex'), g.full_text_utf8_hex, 'full_text bytes')
          assert.equal(tok.decode(all), g.full_text, 'full_text')
          // The stream decoder emits the same text, U+FFFD for invalid bytes in the same places.
          assert.equal(stream(tok, all, true), g.full_text, 'full_text, streamed')
          // Generation stops on an end-of-generation token and leaves it out, so none of these is one.
          for (const id of g.ids) assert.equal(tok.isEog(id), false, `generated token ${id} is not EOG`)
          total += 5
        }
      })

      it('teacher_forced.ids: the first tokens of [BOS] + tokenize(text)', () => {
        const ids = tok.encode(inputs.teacher_forced_text, {addSpecial: true}).slice(0, inputs.teacher_forced_tokens)
        assert.deepEqual(ids, ref.teacher_forced.ids)
        total += 1
      })

      const perplexityIds = ref.perplexity?.token_ids
      if (perplexityIds) {
        it('perplexity.token_ids: [BOS] + tokenize(corpus-stories.txt)', () => {
          const corpus = readFileSync(sharedPath(...inputs.perplexity_corpus.replace(/^shared\//, '').split('/')), 'utf8')
          assert.deepEqual(tok.encode(corpus, {addSpecial: true}), perplexityIds)
          total += 1
        })
      }
    })
  }

  it('covers every reference file', (t) => {
    assert.ok(referenceFiles.length >= 18, `found ${referenceFiles.length} reference files`)
    t.diagnostic(`${referenceFiles.length} reference files, ${total} checks matched`)
  })
})

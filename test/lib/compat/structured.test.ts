// structured: passes on stories260K and a random-weight fixture (the grammar holds even where the
// model is noise); a budget too small for the document fails it; the verdict (the one the check
// uses) fails the real answer under a stricter schema than the one constrained, a non-member of the
// enum (a prefix of a label too), and text that is not JSON.
import assert from 'node:assert/strict'
import {after, describe, test} from 'node:test'

import {documentVerdict, ENUM_SCHEMA, LABELS, PERSON_SCHEMA, structured} from '../../../src/lib/compat/checks/structured.js'
import {checkEnv, rowFor, scratch} from '../../helpers/compat-chat.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const PASS =
  /^schema answer (\{.*\}) \(\d+ tokens, \d+ forced\) valid under ajv; enum answer "([a-z-]+)" \(label \d+ of 50, \d+ tokens\) valid under ajv; compile [\d.]+ \+ [\d.]+ ms, masks [\d.]+ ms$/

describe('structured', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const tmp = scratch('runner-compat-structured-')
  const env = checkEnv(tmp.dir)
  after(() => tmp.remove())

  test('passes on stories260K and on the random llama fixture; the verdict fails the answer under a stricter schema', async () => {
    for (const model of [STORIES, sharedPath('fixtures', 'llama.gguf')]) {
      assert.equal(await structured.when(rowFor(model), {}, env), undefined)
      const out = await structured.run(rowFor(model), {}, env)
      assert.equal(out.outcome, 'pass', out.evidence)
      const [, doc, label] = PASS.exec(out.evidence) ?? assert.fail(out.evidence)
      assert.ok(LABELS.includes(label as (typeof LABELS)[number]))
      // Mutation of the verdict's schema: the same answer, judged against one it was not constrained by, fails.
      const stricter = {...PERSON_SCHEMA, properties: {...PERSON_SCHEMA.properties, age: {type: 'integer', maximum: -1}}}
      const v = documentVerdict(stricter, doc!)
      assert.equal(v.ok, false)
      assert.match(!v.ok ? v.why : '', /is not valid under ajv: answer\/age must be <= -1$/)
    }
  })

  test('a budget too small for the document fails it', async () => {
    const out = await structured.run(rowFor(STORIES), {maxTokens: 6}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(out.evidence, /^the schema answer ended on length after 6 tokens, not complete: "\{/)
  })
})

describe('structured verdict', () => {
  test('exactly one label of the 50 passes; a non-member, a prefix of a label, or two labels fail', () => {
    assert.equal(LABELS.length, 50)
    assert.equal(new Set(LABELS).size, 50)
    assert.deepEqual(documentVerdict(ENUM_SCHEMA, '"science-fiction"'), {ok: true, value: 'science-fiction'})
    for (const answer of ['"scienc"', '"sci"', '"astrology"', '["art", "arts"]', '"art arts"']) {
      const v = documentVerdict(ENUM_SCHEMA, answer)
      assert.equal(v.ok, false, answer)
      assert.match(!v.ok ? v.why : '', /is not valid under ajv: answer must be equal to one of the allowed values$/)
    }
  })

  test('a document ajv accepts passes; one it refuses, or text that is not JSON, fails', () => {
    assert.deepEqual(documentVerdict(PERSON_SCHEMA, '{"name": "Lily", "age": 3, "pet": "cat"}'), {
      ok: true,
      value: {name: 'Lily', age: 3, pet: 'cat'},
    })
    const missing = documentVerdict(PERSON_SCHEMA, '{"name": "Lily", "age": 3.5}')
    assert.match(!missing.ok ? missing.why : '', /answer must have required property 'pet', answer\/age must be integer$/)
    const cut = documentVerdict(PERSON_SCHEMA, '{"name": "Li')
    assert.match(!cut.ok ? cut.why : '', /^"\{\\"name\\": \\"Li" is not JSON \(/)
  })
})

/**
 * Receipts: run --transcript, keygen, verify. Anchored outside our code: the chain hash against the
 * sha256sum tool run on the file's prefix, signatures against node:crypto's Ed25519 and OpenSSL's
 * reading of the key files, exact output bytes against llama.cpp's reference bytes, and the
 * forgery suite's verdicts against what each edit must produce.
 */
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import {createHash, createPrivateKey, createPublicKey, verify as cryptoVerify} from 'node:crypto'
import {copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir, totalmem} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {verifyReceipt, type VerifyReport} from '../../src/lib/receipt/index.js'
import {hasShared, NO_SHARED_REASON, runCli, runCliAsync, sharedPath} from '../helpers/shared.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON

/** A receipt as parsed JSON: a forgery writes any value anywhere (verify must refuse it), so no schema type fits. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a forgery's whole point is to break the receipt's types
type ReceiptJson = Record<string, any>

/** Re-chain a receipt the way anyone could: JSON in key order, sha256 of the prefix, no signature. */
function forge(file: string, edit: (r: ReceiptJson) => void): string {
  const r = JSON.parse(readFileSync(file, 'utf8'))
  edit(r)
  delete r.chain
  delete r.signature
  const prefix = JSON.stringify(r).slice(0, -1)
  const chain = createHash('sha256').update(prefix, 'utf8').digest('hex')
  const out = `${file}.forged-${Math.random().toString(16).slice(2)}.json`
  writeFileSync(out, `${prefix},"chain":"${chain}"}\n`)
  return out
}

describe('receipts', {skip: SKIP}, () => {
  let dir: string
  let model: string
  let plain: string // unsigned receipt, 64-bit seed above 2^53
  let signed: string
  let pub: string
  let key: string
  let otherPub: string

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'runner-receipts-'))
    model = sharedPath('models/stories260K.gguf')
    plain = join(dir, 'plain.json')
    signed = join(dir, 'signed.json')
    key = join(dir, 'alice.key')
    pub = join(dir, 'alice.pub')
    otherPub = join(dir, 'mallory.pub')
    const [a, b] = await Promise.all([
      runCliAsync(['keygen', '--out', join(dir, 'alice')]),
      runCliAsync(['keygen', '--out', join(dir, 'mallory')]),
    ])
    assert.equal(a.status, 0, a.stderr)
    assert.equal(b.status, 0, b.stderr)
    const common = [
      'run',
      '-m',
      model,
      '-p',
      'Once upon a time, "Tom" said \\ hi',
      '-n',
      '20',
      '--temp',
      '0.9',
      '--top-k',
      '20',
      '-c',
      '128',
    ]
    const [r1, r2] = await Promise.all([
      runCliAsync([...common, '--seed', '9007199254740993', '--transcript', plain, '--json']),
      runCliAsync([...common, '--seed', '42', '--transcript', signed, '--sign-key', key]),
    ])
    assert.equal(r1.status, 0, r1.stderr)
    assert.equal(r2.status, 0, r2.stderr)
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  const verify = (receiptPath: string, extra: Partial<Parameters<typeof verifyReceipt>[0]> = {}): Promise<VerifyReport> =>
    verifyReceipt({receiptPath, modelPath: model, ...extra})

  test('keygen: private key 0600, refused when present, PEM that node:crypto and OpenSSL read', () => {
    assert.equal(statSync(key).mode & 0o777, 0o600)
    const again = runCli(['keygen', '--out', join(dir, 'alice')])
    assert.equal(again.status, 2)
    assert.match(again.stderr, /already exists/)
    const raw = createPublicKey(createPrivateKey(readFileSync(key)))
      .export({format: 'der', type: 'spki'})
      .subarray(-32)
    assert.deepEqual(raw, createPublicKey(readFileSync(pub)).export({format: 'der', type: 'spki'}).subarray(-32))
    const openssl = spawnSync('openssl', ['pkey', '-in', key, '-pubout'], {encoding: 'utf8'})
    if (openssl.status === 0) assert.equal(openssl.stdout, readFileSync(pub, 'utf8'))
  })

  test('the receipt is valid JSON with the exact 64-bit seed, every setting and the tokens', () => {
    const r = JSON.parse(readFileSync(plain, 'utf8'))
    assert.equal(r.config.sampling.seed, '9007199254740993', '2^53+1 kept exact as a decimal string')
    assert.equal(r.config.sampling.temperature, 0.9)
    assert.equal(r.config.sampling.topK, 20)
    assert.equal(r.config.nCtx, 128)
    assert.equal(r.prompt.text, 'Once upon a time, "Tom" said \\ hi')
    assert.equal(r.output.tokens.length, 20)
    assert.equal(r.output.logprobs.length, 20)
    assert.equal(r.model.files[0].sha256, createHash('sha256').update(readFileSync(model)).digest('hex'))
    assert.deepEqual(Object.keys(r).slice(-2), ['prev', 'chain'])
  })

  test('the chain hash equals sha256sum of the bytes before ,"chain"', () => {
    const bytes = readFileSync(plain)
    const at = bytes.lastIndexOf(',"chain":"')
    const prefixFile = join(dir, 'prefix.bin')
    writeFileSync(prefixFile, bytes.subarray(0, at))
    const sum = execFileSync('sha256sum', [prefixFile], {encoding: 'utf8'}).split(' ')[0]
    assert.equal(JSON.parse(bytes.toString('utf8')).chain, sum)
  })

  test('the signature verifies with node:crypto over the bytes before ,"signature"', () => {
    const bytes = readFileSync(signed)
    const r = JSON.parse(bytes.toString('utf8'))
    const message = bytes.subarray(0, bytes.lastIndexOf(',"signature":'))
    const publicKey = createPublicKey({
      key: {kty: 'OKP', crv: 'Ed25519', x: Buffer.from(r.signature.publicKey, 'hex').toString('base64url')},
      format: 'jwk',
    })
    assert.ok(cryptoVerify(null, message, publicKey, Buffer.from(r.signature.value, 'hex')))
    assert.equal(
      r.signature.publicKey,
      createPublicKey(readFileSync(pub)).export({format: 'der', type: 'spki'}).subarray(-32).toString('hex'),
    )
  })

  test('verify: VERIFIED exits 0, with --json the document', async () => {
    const r = await runCliAsync(['verify', signed, '-m', model, '--trust-key', pub, '--require-signed', '--json'])
    assert.equal(r.status, 0, r.stderr + r.stdout)
    const doc = JSON.parse(r.stdout)
    assert.equal(doc.verdict, 'VERIFIED')
    assert.deepEqual(
      doc.checks.map((c: {name: string}) => c.name),
      ['structure', 'chain', 'signature', 'link', 'model', 'settings', 'replay'],
    )
    const human = await runCliAsync(['verify', plain, '-m', model])
    assert.equal(human.status, 0, human.stderr)
    assert.match(human.stdout, /^VERIFIED: replayed 20 tokens/m)
  })

  test('replay is exact across kernel levels (RUNNER_CPU_MAX=scalar, avx2)', async () => {
    for (const level of ['scalar', 'avx2']) {
      const r = await runCliAsync(['verify', plain, '-m', model, '--json'], {env: {RUNNER_CPU_MAX: level}})
      assert.equal(r.status, 0, `${level}: ${r.stdout}${r.stderr}`)
      assert.match(JSON.parse(r.stdout).checks.at(-1).detail, /bit-identical/)
    }
    const bad = await runCliAsync(['verify', plain, '-m', model], {env: {RUNNER_CPU_MAX: 'sse9'}})
    assert.equal(bad.status, 1)
    assert.match(bad.stderr, /RUNNER_CPU_MAX/)
  })

  test('a chain of receipts: --transcript-prev links, --prev checks the link', async () => {
    const second = join(dir, 'second.json')
    const r = await runCliAsync([
      'run',
      '-m',
      model,
      '-p',
      'The cat',
      '-n',
      '8',
      '--seed',
      '3',
      '-c',
      '64',
      '--transcript',
      second,
      '--transcript-prev',
      plain,
    ])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(JSON.parse(readFileSync(second, 'utf8')).prev, JSON.parse(readFileSync(plain, 'utf8')).chain)
    assert.equal((await verify(second, {prevPath: plain})).verdict, 'VERIFIED')
    const broken = await verify(second, {prevPath: signed})
    assert.equal(broken.verdict, 'UNVERIFIABLE')
    assert.equal(broken.exitCode, 3)
    assert.match(broken.reason, /links to/)
    assert.equal(broken.modelLoaded, false)
    // A previous receipt that was itself altered cannot anchor a link.
    const bad = join(dir, 'bad-prev.json')
    writeFileSync(bad, readFileSync(plain, 'utf8').replace('"temperature":0.9', '"temperature":0.8'))
    const refused = await runCliAsync([
      'run',
      '-m',
      model,
      '-p',
      'x',
      '-n',
      '1',
      '--transcript',
      join(dir, 'never.json'),
      '--transcript-prev',
      bad,
    ])
    assert.equal(refused.status, 2)
    assert.match(refused.stderr, /altered/)
  })

  describe('forgery suite', () => {
    const expectVerdict = async (
      file: string,
      verdict: string,
      reason: RegExp,
      extra: Partial<Parameters<typeof verifyReceipt>[0]> = {},
    ) => {
      const r = await verify(file, extra)
      assert.equal(r.verdict, verdict, r.reason)
      assert.equal(r.exitCode, {VERIFIED: 0, DIVERGED: 2, UNVERIFIABLE: 3}[verdict])
      assert.match(r.reason, reason)
      if (verdict === 'UNVERIFIABLE') assert.equal(r.modelLoaded, false, 'decided before the model is loaded')
      return r
    }

    test('an edited output byte, chain not recomputed: UNVERIFIABLE', async () => {
      const f = join(dir, 'edited-byte.json')
      const r = JSON.parse(readFileSync(plain, 'utf8'))
      const text = readFileSync(plain, 'utf8')
      const at = text.indexOf(`"bytes":"${r.output.bytes}"`) + '"bytes":"'.length
      writeFileSync(f, text.slice(0, at) + (text[at] === '0' ? '1' : '0') + text.slice(at + 1))
      await expectVerdict(f, 'UNVERIFIABLE', /altered/)
    })

    test('an edited output token, chain recomputed: DIVERGED at that token', async () => {
      const f = forge(plain, (r) => {
        r.output.tokens[7] = (r.output.tokens[7] + 1) % 512
      })
      const r = await expectVerdict(f, 'DIVERGED', /token 7/)
      assert.equal(r.divergence?.at, 'token')
      assert.equal(r.divergence?.index, 7)
      const cli = await runCliAsync(['verify', f, '-m', model])
      assert.equal(cli.status, 2)
      assert.match(cli.stdout, /DIVERGED: diverged at output token 7/)
      assert.match(cli.stdout, /expected: token \d+/)
    })

    test('an edited seed, chain recomputed: DIVERGED', async () => {
      const f = forge(plain, (r) => {
        r.config.sampling.seed = '9007199254740992'
      })
      await expectVerdict(f, 'DIVERGED', /diverged at output token/)
    })

    test('an edited prompt text, chain recomputed: DIVERGED at the prompt', async () => {
      const f = forge(plain, (r) => {
        r.prompt.text = 'Once upon a time, "Tim" said \\ hi'
      })
      const r = await expectVerdict(f, 'DIVERGED', /prompt text/)
      assert.equal(r.divergence?.at, 'prompt')
    })

    test('an edited signature: UNVERIFIABLE', async () => {
      const f = join(dir, 'edited-sig.json')
      const text = readFileSync(signed, 'utf8')
      const v = JSON.parse(text).signature.value as string
      writeFileSync(f, text.replace(v, (v[0] === 'a' ? 'b' : 'a') + v.slice(1)))
      await expectVerdict(f, 'UNVERIFIABLE', /signature does not match/)
    })

    test('signed by an untrusted key under --require-signed: UNVERIFIABLE', async () => {
      await expectVerdict(signed, 'UNVERIFIABLE', /not among the 1 trusted/, {trustKeys: [otherPub], requireSigned: true})
      await expectVerdict(plain, 'UNVERIFIABLE', /not signed/, {trustKeys: [pub], requireSigned: true})
      const cli = await runCliAsync(['verify', signed, '-m', model, '--trust-key', otherPub, '--require-signed'])
      assert.equal(cli.status, 3)
      assert.match(cli.stdout, /^UNVERIFIABLE:/m)
    })

    test('the wrong model file: UNVERIFIABLE', async () => {
      await expectVerdict(plain, 'UNVERIFIABLE', /wrong model/, {modelPath: sharedPath('fixtures/stories260K-q8_0.gguf')})
      const copy = join(dir, 'same-bytes.gguf')
      copyFileSync(model, copy)
      assert.equal((await verify(plain, {modelPath: copy})).verdict, 'VERIFIED', 'the model is named by its bytes, not its path')
    })

    test('an unknown version, a malformed record, invalid settings: UNVERIFIABLE', async () => {
      await expectVerdict(
        forge(plain, (r) => (r.version = 2)),
        'UNVERIFIABLE',
        /version 2 is unknown/,
      )
      await expectVerdict(
        forge(plain, (r) => (r.extra = 1)),
        'UNVERIFIABLE',
        /malformed.*"extra"/,
      )
      await expectVerdict(
        forge(plain, (r) => (r.config.sampling.topP = 1.5)),
        'UNVERIFIABLE',
        /settings are invalid.*topP/,
      )
      await expectVerdict(
        forge(plain, (r) => (r.config.threads = 0)),
        'UNVERIFIABLE',
        /config.threads 0/,
      )
      await expectVerdict(
        forge(plain, (r) => (r.prompt.tokens[1] = 9999)),
        'UNVERIFIABLE',
        /outside the model's vocabulary/,
      )
      const trunc = join(dir, 'truncated.json')
      writeFileSync(trunc, readFileSync(plain).subarray(0, 300))
      await expectVerdict(trunc, 'UNVERIFIABLE', /not JSON/)
    })
  })

  test("exact bytes: a random-weight model emits invalid UTF-8; the receipt keeps llama.cpp's bytes and stays valid JSON", async () => {
    const ref = JSON.parse(readFileSync(sharedPath('reference/llama.json'), 'utf8')).greedy[0]
    const f = join(dir, 'bytes.json')
    const r = await runCliAsync([
      'run',
      '-m',
      sharedPath('fixtures/llama.gguf'),
      '-p',
      ref.prompt,
      '-n',
      '16',
      '--temp',
      '0',
      '--kv-type',
      'f32',
      '--transcript',
      f,
      '--json',
    ])
    assert.equal(r.status, 0, r.stderr)
    const receipt = JSON.parse(readFileSync(f, 'utf8'))
    assert.deepEqual(receipt.prompt.tokens, ref.prompt_ids)
    assert.deepEqual(receipt.output.tokens, ref.ids.slice(0, 16))
    assert.ok(
      !Buffer.from(receipt.output.bytes, 'hex').equals(Buffer.from(Buffer.from(receipt.output.bytes, 'hex').toString('utf8'))),
      'the bytes are not valid UTF-8',
    )
    assert.ok((ref.full_text_utf8_hex as string).includes(receipt.output.bytes), "llama.cpp's detokenized bytes contain ours")
    assert.equal((await verifyReceipt({receiptPath: f, modelPath: sharedPath('fixtures/llama.gguf')})).verdict, 'VERIFIED')
  })

  test('runs that fill the context, or ask for more tokens than it holds, verify', async () => {
    const full = join(dir, 'full.json')
    const big = join(dir, 'big-n.json')
    const [a, b] = await Promise.all([
      runCliAsync(['run', '-m', model, '-p', 'Once', '-c', '16', '--temp', '0', '--transcript', full]),
      runCliAsync(['run', '-m', model, '-p', 'Once', '-c', '32', '-n', '100', '--temp', '0', '--transcript', big]),
    ])
    assert.equal(a.status, 0, a.stderr)
    assert.equal(b.status, 0, b.stderr)
    assert.equal(JSON.parse(readFileSync(full, 'utf8')).output.finishReason, 'context')
    for (const f of [full, big]) assert.equal((await verify(f)).verdict, 'VERIFIED', f)
  })

  test('more forgeries: finish reason, log-probabilities behind an edited build hash, profile, architecture, size, form, small-order key', async () => {
    const r1 = await verify(forge(plain, (r) => (r.output.finishReason = 'eos')))
    assert.equal(r1.verdict, 'DIVERGED', r1.reason)
    const r2 = await verify(
      forge(plain, (r) => {
        r.engine.addonSha256 = '0'.repeat(64)
        r.output.logprobs = r.output.logprobs.map(() => -0.5)
      }),
    )
    assert.equal(r2.verdict, 'DIVERGED', r2.reason)
    assert.equal(r2.divergence?.at, 'logprob')
    for (const [edit, why] of [
      [(r: ReceiptJson) => (r.profile = {name: 'bogus', version: 99}), /malformed.*profile/],
      [(r: ReceiptJson) => (r.model.architecture = 'gpt9'), /wrong model.*gpt9/],
      [(r: ReceiptJson) => (r.model.files[0].bytes = 1), /wrong model.*bytes/],
    ] as const) {
      const r = await verify(forge(plain, edit))
      assert.equal(r.verdict, 'UNVERIFIABLE', r.reason)
      assert.match(r.reason, why)
    }
    // Valid chain and signature, but not the canonical form: reordered signature keys, no final newline.
    const text = readFileSync(signed, 'utf8')
    const sig = JSON.parse(text).signature
    const odd = join(dir, 'odd-form.json')
    writeFileSync(
      odd,
      text.slice(0, text.lastIndexOf(',"signature":')) +
        `,"signature":{"value":"${sig.value}","publicKey":"${sig.publicKey}","algorithm":"ed25519"}}`,
    )
    const r3 = await verify(odd, {trustKeys: [pub], requireSigned: true})
    assert.equal(r3.verdict, 'UNVERIFIABLE')
    assert.match(r3.reason, /canonical form/)
    // A small-order public key with the identity signature "verifies" any message under ZIP-215: refused.
    const weak = join(dir, 'weak-key.json')
    const prefix = text.slice(0, text.lastIndexOf(',"signature":'))
    writeFileSync(
      weak,
      `${prefix},"signature":{"algorithm":"ed25519","publicKey":"01${'00'.repeat(31)}","value":"01${'00'.repeat(63)}"}}\n`,
    )
    const r4 = await verify(weak)
    assert.equal(r4.verdict, 'UNVERIFIABLE')
    assert.match(r4.reason, /signature does not match/)
  })

  test('a receipt whose context could not fit this machine is refused before the model loads', async () => {
    // 64 KV heads of 64 values in 8 blocks: 256 KiB of F32 KV per position, so 2^24 positions need 4 TiB.
    const wide = join(dir, 'wide-kv.gguf')
    await makeTestModel(wide, {
      arch: 'qwen3',
      nEmbd: 64,
      nLayer: 8,
      nHead: 64,
      nHeadKv: 64,
      headDim: 64,
      nFf: 128,
      nCtx: 256,
      type: 'f32',
      seed: 5n,
      tokenizerFrom: model,
    })
    const small = join(dir, 'wide-kv.json')
    const run = await runCliAsync(['run', '-m', wide, '-p', 'x', '-n', '2', '-c', '64', '--kv-type', 'f32', '--transcript', small])
    assert.equal(run.status, 0, run.stderr)
    assert.equal((await verifyReceipt({receiptPath: small, modelPath: wide})).verdict, 'VERIFIED')
    const r = await verifyReceipt({receiptPath: forge(small, (x) => (x.config.nCtx = 2 ** 24)), modelPath: wide})
    assert.ok(2 ** 24 * 8 * 2 * 64 * 64 * 4 > totalmem())
    assert.equal(r.verdict, 'UNVERIFIABLE')
    assert.match(r.reason, /KV cache/)
    assert.equal(r.modelLoaded, false)
  })

  test('run --transcript into a folder that does not exist is refused before the model runs', () => {
    const r = runCli(['run', '-m', model, '-p', 'x', '-n', '4', '--transcript', join(dir, 'no-such-folder', 'r.json')])
    assert.equal(r.status, 2)
    assert.match(r.stderr, /RECEIPT_UNWRITABLE/)
    assert.doesNotMatch(r.stderr, /tok\/s/, 'nothing was generated')
  })

  test('a constrained run records its schema (text and hash) and verify replays it; a changed schema diverges or is refused', async () => {
    const schema = JSON.stringify({
      type: 'object',
      properties: {n: {type: 'integer', minimum: 0, maximum: 9}},
      required: ['n'],
      additionalProperties: false,
    })
    const path = join(dir, 'constrained.json')
    const run = await runCliAsync([
      'run',
      '-m',
      model,
      '-p',
      'x',
      '-n',
      '200',
      '--temp',
      '1',
      '--seed',
      '3',
      '--json-schema',
      schema,
      '--transcript',
      path,
      '--json',
    ])
    assert.equal(run.status, 0, run.stderr)
    const out = JSON.parse(run.stdout) as {
      text: string
      finishReason: string
      constraint: {kind: string; sha256: string; forcedTokens: number}
    }
    assert.equal(out.finishReason, 'eos')
    const n = (JSON.parse(out.text) as {n: unknown}).n
    assert.ok(typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 9, out.text)
    const recorded = (JSON.parse(readFileSync(path, 'utf8')) as ReceiptJson).config.constraint
    assert.deepEqual(recorded, {kind: 'json-schema', sha256: out.constraint.sha256, text: schema})
    assert.equal(createHash('sha256').update(`json-schema\n${schema}`).digest('hex'), recorded.sha256, 'the hash is of kind and text')
    assert.equal((await verifyReceipt({receiptPath: path, modelPath: model})).verdict, 'VERIFIED')
    // Another schema under a consistent hash: the replay no longer produces the recorded tokens.
    const other = JSON.stringify({type: 'object', properties: {m: {type: 'integer'}}, required: ['m']})
    const forged = forge(path, (x) => {
      x.config.constraint.text = other
      x.config.constraint.sha256 = createHash('sha256').update(`json-schema\n${other}`).digest('hex')
    })
    assert.equal((await verifyReceipt({receiptPath: forged, modelPath: model})).verdict, 'DIVERGED')
    // A hash that is not the text's is refused before anything runs.
    const tampered = forge(path, (x) => (x.config.constraint.text = other))
    const r = await verifyReceipt({receiptPath: tampered, modelPath: model})
    assert.equal(r.modelLoaded, false)
    assert.match(r.reason, /constraint/)
  })

  test('verify usage errors exit 1, not 2 (DIVERGED)', () => {
    const r = runCli(['verify', plain])
    assert.equal(r.status, 1)
  })
})

// `runner sign` and the signature flags end to end (compiled CLI). Anchors: openssl makes the key and
// gives its fingerprint (pkey -pubin -outform DER | sha256), which the receipt must record; openssl
// checks the bundle's raw signature over the DSSE PAE (dgst -sha256 -verify).
import assert from 'node:assert/strict'
import {copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {preAuthEncoding} from '../../src/lib/signing/index.js'
import {HAS_OPENSSL, NO_OPENSSL_REASON, opensslEcKeys, opensslFingerprint, opensslStatus} from '../helpers/openssl.js'
import {hasShared, NO_SHARED_REASON, runCli, runCliAsync, sharedPath} from '../helpers/shared.js'

const SKIP = !HAS_OPENSSL ? NO_OPENSSL_REASON : !hasShared() ? NO_SHARED_REASON : false
const dir = mkdtempSync(join(tmpdir(), 'runner-sign-cli-'))
after(() => rmSync(dir, {recursive: true, force: true}))
const MODEL = join(dir, 'stories260K.gguf')
const BUNDLE = `${MODEL}.sig`

describe('runner sign and --model-sig', {skip: SKIP}, () => {
  let keys: {key: string; pub: string}
  before(() => {
    copyFileSync(sharedPath('models', 'stories260K.gguf'), MODEL)
    keys = opensslEcKeys(dir, 'prime256v1')
  })

  test('sign writes <model>.sig; openssl verifies its signature; a second sign needs --force', () => {
    const r = runCli(['sign', '-m', MODEL, '--key', keys.key, '--json'])
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout) as {bundle: string; keyFingerprint: string; curve: string; files: {name: string; sha256: string}[]}
    assert.equal(out.bundle, BUNDLE)
    assert.equal(out.keyFingerprint, opensslFingerprint(keys.pub))
    assert.equal(out.curve, 'P-256')
    const b = JSON.parse(readFileSync(BUNDLE, 'utf8')) as {
      dsseEnvelope: {payload: string; payloadType: string; signatures: {sig: string}[]}
    }
    writeFileSync(join(dir, 'pae.bin'), preAuthEncoding(b.dsseEnvelope.payloadType, Buffer.from(b.dsseEnvelope.payload, 'base64')))
    writeFileSync(join(dir, 'sig.der'), Buffer.from(b.dsseEnvelope.signatures[0]!.sig, 'base64'))
    const ok = opensslStatus(['dgst', '-sha256', '-verify', keys.pub, '-signature', join(dir, 'sig.der'), join(dir, 'pae.bin')])
    assert.equal(ok.status, 0, ok.out)
    const again = runCli(['sign', '-m', MODEL, '--key', keys.key])
    assert.equal(again.status, 2)
    assert.match(again.stderr, /already exists; pass --force/)
  })

  test('run with a valid signature: works, and the receipt records the signer fingerprint openssl computes', async () => {
    const receipt = join(dir, 'r.json')
    const r = await runCliAsync([
      'run',
      '-m',
      MODEL,
      '--model-sig',
      BUNDLE,
      '--model-pubkey',
      keys.pub,
      '-p',
      'Once',
      '-n',
      '4',
      '--temp',
      '0',
      '--transcript',
      receipt,
    ])
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stderr, /model signature verified: P-256 key/)
    const recorded = (JSON.parse(readFileSync(receipt, 'utf8')) as {model: {signature: Record<string, string>}}).model.signature
    assert.equal(recorded.keyFingerprint, opensslFingerprint(keys.pub))
    assert.equal(recorded.predicateType, 'https://model_signing/signature/v1.0')
    assert.equal(recorded.bundleSha256, opensslStatus(['dgst', '-sha256', '-r', BUNDLE]).out.split(' ')[0])
    // verify replays it and checks the signature the receipt names; another signer's bundle is UNVERIFIABLE.
    const v = await runCliAsync(['verify', receipt, '-m', MODEL, '--model-sig', BUNDLE, '--model-pubkey', keys.pub])
    assert.equal(v.status, 0, v.stdout + v.stderr)
    assert.match(v.stdout, /signature verified \(P-256 key/)
    const other = opensslEcKeys(dir, 'secp384r1')
    const otherSig = join(dir, 'other.sig')
    assert.equal(runCli(['sign', '-m', MODEL, '--key', other.key, '-o', otherSig]).status, 0)
    const w = await runCliAsync(['verify', receipt, '-m', MODEL, '--model-sig', otherSig, '--model-pubkey', other.pub])
    assert.equal(w.status, 3, w.stdout)
    assert.match(w.stdout, /UNVERIFIABLE: the model is signed by key [0-9a-f]{64}, but the receipt was made with a model signed by/)
  })

  test('refusals: a forged bundle exits 3 before any text; --require-signed-model alone exits 3; a flag without its pair exits 2', async () => {
    const b = JSON.parse(readFileSync(BUNDLE, 'utf8')) as {dsseEnvelope: {payload: string}}
    const payload = Buffer.from(b.dsseEnvelope.payload, 'base64')
    payload[payload.length - 3] ^= 1
    b.dsseEnvelope.payload = payload.toString('base64')
    const forged = join(dir, 'forged.sig')
    writeFileSync(forged, JSON.stringify(b))
    const [f, req, half] = await Promise.all([
      runCliAsync(['run', '-m', MODEL, '--model-sig', forged, '--model-pubkey', keys.pub, '-p', 'Once', '-n', '4']),
      runCliAsync(['run', '-m', MODEL, '--require-signed-model', '-p', 'Once', '-n', '4']),
      runCliAsync(['embed', '-m', MODEL, '--model-sig', BUNDLE, '-p', 'Once']),
    ])
    assert.equal(f.status, 3, f.stderr)
    assert.equal(f.stdout, '')
    assert.match(f.stderr, /model signature refused: dsseEnvelope\.signatures\[0\]\.sig: does not verify .*MODEL_SIGNATURE_REFUSED/)
    assert.equal(req.status, 3, req.stderr)
    assert.match(req.stderr, /--require-signed-model.*pass --model-sig BUNDLE and --model-pubkey PEM/)
    assert.equal(half.status, 2, half.stderr)
    assert.match(half.stderr, /--model-sig needs --model-pubkey/)
  })

  test('quantize and remove-sublayer check the input: signed, they write; a forged bundle or another key exits 3 and writes nothing', async () => {
    const q8 = join(dir, 'q8.gguf')
    const cut = join(dir, 'cut.gguf')
    mkdirSync(join(dir, 'other-signer'), {recursive: true})
    const other = opensslEcKeys(join(dir, 'other-signer'), 'prime256v1')
    const [q, r, wrongKey, wrongCut] = await Promise.all([
      runCliAsync(['quantize', MODEL, q8, '--type', 'Q8_0', '--model-sig', BUNDLE, '--model-pubkey', keys.pub, '--json']),
      runCliAsync(['remove-sublayer', MODEL, cut, 'attn:1', '--model-sig', BUNDLE, '--model-pubkey', keys.pub, '--json']),
      runCliAsync(['quantize', MODEL, join(dir, 'never.gguf'), '--type', 'Q8_0', '--model-sig', BUNDLE, '--model-pubkey', other.pub]),
      runCliAsync(['remove-sublayer', MODEL, join(dir, 'never-cut.gguf'), 'attn:1', '--model-sig', BUNDLE, '--model-pubkey', other.pub]),
    ])
    assert.equal(q.status, 0, q.stderr)
    assert.equal(r.status, 0, r.stderr)
    assert.ok(readFileSync(q8).length > 0 && readFileSync(cut).length > 0)
    for (const w of [wrongKey, wrongCut]) {
      assert.equal(w.status, 3, w.stderr)
      assert.match(w.stderr, /MODEL_SIGNATURE_REFUSED/)
    }
    assert.throws(() => readFileSync(join(dir, 'never.gguf')), /ENOENT/)
    assert.throws(() => readFileSync(join(dir, 'never-cut.gguf')), /ENOENT/)
  })
})

// runner sign's bundles against implementations we did not write, and forgeries refused before the
// model is read:
//   - openssl makes the P-256/P-384/P-521 keys, checks the raw ECDSA signature over the DSSE PAE
//     (dgst -sha256/-sha384/-sha512 -verify), and gives the key fingerprint (pkey -outform DER | sha256);
//   - sigstore-js (@sigstore/bundle + @sigstore/verify, the verifier `sigstore.verify` runs once it has
//     fetched a trust root, here given the key instead) verifies our P-256 bundle's DSSE signature. It
//     hashes with the key's default digest (SHA-256) whatever the curve, so it cannot check model
//     signing's P-384/SHA-384 or P-521/SHA-512 signatures: openssl anchors those;
//   - a bundle in model_signing's exact shape whose signature openssl made (dgst -sign) over the PAE:
//     our verifier accepts it.
import assert from 'node:assert/strict'
import {createPublicKey} from 'node:crypto'
import {copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {bundleFromJSON} from '@sigstore/bundle'
import {toSignedEntity, toTrustMaterial, Verifier} from '@sigstore/verify'

import {Model} from '../../../src/lib/engine/index.js'
import {
  buildStatement,
  checkMappedFiles,
  hashFile,
  PAYLOAD_TYPE,
  preAuthEncoding,
  rootDigest,
  signModel,
  verifyModelSignature,
} from '../../../src/lib/signing/index.js'
import {HAS_OPENSSL, NO_OPENSSL_REASON, openssl, opensslEcKeys, opensslFingerprint, opensslStatus} from '../../helpers/openssl.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const SKIP = !HAS_OPENSSL ? NO_OPENSSL_REASON : !hasShared() ? NO_SHARED_REASON : false
const dir = mkdtempSync(join(tmpdir(), 'runner-sign-'))
after(() => rmSync(dir, {recursive: true, force: true}))
const MODEL = join(dir, 'stories260K.gguf')
const CURVES = [
  {openssl: 'prime256v1', name: 'P-256', dgst: '-sha256'},
  {openssl: 'secp384r1', name: 'P-384', dgst: '-sha384'},
  {openssl: 'secp521r1', name: 'P-521', dgst: '-sha512'},
] as const
const keys: Record<string, {key: string; pub: string}> = {}

interface BundleJson {
  mediaType: string
  verificationMaterial: {publicKey: {hint?: string}}
  dsseEnvelope: {payload: string; payloadType: string; signatures: {sig: string; keyid?: string}[]}
}
const readBundle = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as BundleJson
const writeBundle = (name: string, bundle: BundleJson) => {
  const path = join(dir, name)
  writeFileSync(path, JSON.stringify(bundle))
  return path
}

/** The refusal of a promise: exit 3 and a MODEL_SIGNATURE_* code, or the test fails. */
async function refusal(p: Promise<unknown>): Promise<{code: string; message: string}> {
  const e = (await p.then(
    () => assert.fail('expected the model to be refused'),
    (error: unknown) => error,
  )) as {code: string; exitCode: number; message: string}
  assert.equal(e.exitCode, 3, e.message)
  assert.match(e.code, /^MODEL_SIGNATURE_/, e.message)
  return e
}

/** openssl's own ECDSA signature (DER) over `data` with `key`. */
function opensslSign(key: string, dgst: string, data: Buffer): Buffer {
  const input = join(dir, 'to-sign.bin')
  writeFileSync(input, data)
  return openssl(['dgst', dgst, '-sign', key, input])
}

describe('runner sign and verify', {skip: SKIP}, () => {
  before(() => {
    copyFileSync(sharedPath('models', 'stories260K.gguf'), MODEL)
    for (const c of CURVES) keys[c.name] = opensslEcKeys(dir, c.openssl)
  })

  for (const c of CURVES) {
    test(`${c.name}: our bundle verifies, openssl checks its raw signature, the fingerprint is openssl's`, async () => {
      const out = join(dir, `${c.name}.sig`)
      const signed = await signModel({modelPath: MODEL, keyPath: keys[c.name]!.key, outPath: out})
      assert.equal(signed.curve, c.name)
      assert.equal(signed.keyFingerprint, opensslFingerprint(keys[c.name]!.pub))
      const verified = await verifyModelSignature([MODEL], {bundlePath: out, publicKeyPath: keys[c.name]!.pub})
      assert.equal(verified?.keyFingerprint, signed.keyFingerprint)
      assert.equal(verified?.files[0]?.name, '.', "model_signing's name for a one-file model")
      assert.equal(verified?.files[0]?.sha256, openssl(['dgst', '-sha256', '-r', MODEL]).toString().split(' ')[0])

      const b = readBundle(out)
      const pae = preAuthEncoding(b.dsseEnvelope.payloadType, Buffer.from(b.dsseEnvelope.payload, 'base64'))
      writeFileSync(join(dir, 'pae.bin'), pae)
      writeFileSync(join(dir, 'sig.der'), Buffer.from(b.dsseEnvelope.signatures[0]!.sig, 'base64'))
      const ok = opensslStatus(['dgst', c.dgst, '-verify', keys[c.name]!.pub, '-signature', join(dir, 'sig.der'), join(dir, 'pae.bin')])
      assert.equal(ok.status, 0, ok.out)
      assert.match(ok.out, /Verified OK/)
      // The PAE is DSSE's, byte for byte.
      const body = Buffer.from(b.dsseEnvelope.payload, 'base64')
      assert.deepEqual(pae, Buffer.concat([Buffer.from(`DSSEv1 28 application/vnd.in-toto+json ${body.length} `), body]))
    })
  }

  test('P-256: sigstore-js verifies our bundle (and refuses it under another key)', async () => {
    const out = join(dir, 'P-256.sig')
    const pem = readFileSync(keys['P-256']!.pub, 'utf8')
    const verifier = (keyPem: string) =>
      new Verifier(
        toTrustMaterial({certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: []} as never, () => ({
          publicKey: createPublicKey(keyPem),
          validFor: () => true,
        })),
        {tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0},
      )
    const entity = toSignedEntity(bundleFromJSON(JSON.parse(readFileSync(out, 'utf8'))))
    assert.ok(verifier(pem).verify(entity))
    assert.throws(() => verifier(readFileSync(keys['P-384']!.pub, 'utf8')).verify(entity), /signature verification failed|SIGNATURE_ERROR/)
  })

  test("a bundle in model_signing's shape, signed by openssl over the PAE, verifies", async () => {
    const statement = buildStatement('stories260K.gguf', [
      {name: '.', algorithm: 'sha256', digest: openssl(['dgst', '-sha256', '-r', MODEL]).toString().split(' ')[0]!},
    ])
    const sig = opensslSign(keys['P-384']!.key, '-sha384', preAuthEncoding(PAYLOAD_TYPE, statement))
    const path = writeBundle('openssl.sig', {
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: {publicKey: {}},
      dsseEnvelope: {
        payload: statement.toString('base64'),
        payloadType: PAYLOAD_TYPE,
        signatures: [{sig: sig.toString('base64'), keyid: ''}],
      },
    })
    const v = await verifyModelSignature([MODEL], {bundlePath: path, publicKeyPath: keys['P-384']!.pub})
    assert.equal(v?.curve, 'P-384')
  })

  describe('forgeries are refused before the model is read', () => {
    const policy = () => ({bundlePath: join(dir, 'P-256.sig'), publicKeyPath: keys['P-256']!.pub})
    /** The statement of the P-256 bundle, changed by `edit`, signed again by openssl with the same key. */
    const resigned = (
      name: string,
      edit: (s: {subject: {digest: {sha256: string}}[]; predicate: {resources: {digest: string}[]}}) => void,
    ) => {
      const b = readBundle(policy().bundlePath)
      const s = JSON.parse(Buffer.from(b.dsseEnvelope.payload, 'base64').toString('utf8'))
      edit(s)
      const payload = Buffer.from(JSON.stringify(s))
      b.dsseEnvelope.payload = payload.toString('base64')
      b.dsseEnvelope.signatures[0]!.sig = opensslSign(keys['P-256']!.key, '-sha256', preAuthEncoding(PAYLOAD_TYPE, payload)).toString(
        'base64',
      )
      return writeBundle(name, b)
    }

    test('a changed resource digest (not signed again): the signature', async () => {
      const b = readBundle(policy().bundlePath)
      const text = Buffer.from(b.dsseEnvelope.payload, 'base64').toString('utf8')
      const digest = /"digest": "([0-9a-f]{64})"/.exec(text)![1]!
      b.dsseEnvelope.payload = Buffer.from(text.replace(digest, `${digest.slice(0, 63)}${digest[63] === '0' ? '1' : '0'}`)).toString(
        'base64',
      )
      const e = await refusal(Model.load(MODEL, {signature: {...policy(), bundlePath: writeBundle('digest.sig', b)}}))
      assert.match(e.message, /dsseEnvelope\.signatures\[0\]\.sig: does not verify/)
    })

    test('a changed resource digest, signed again with its subject digest recomputed: the file digest', async () => {
      const path = resigned('digest-resigned.sig', (s) => {
        s.predicate.resources[0]!.digest = '0'.repeat(64)
        s.subject[0]!.digest.sha256 = rootDigest(s.predicate.resources)
      })
      const e = await refusal(Model.load(MODEL, {signature: {...policy(), bundlePath: path}}))
      assert.match(e.message, /has sha256 [0-9a-f]{64}, the signature lists "\." with 0{64}/)
    })

    test('a changed subject digest, signed again: the statement', async () => {
      const path = resigned('subject.sig', (s) => {
        s.subject[0]!.digest.sha256 = 'f'.repeat(64)
      })
      const e = await refusal(verifyModelSignature([MODEL], {...policy(), bundlePath: path}))
      assert.match(e.message, /statement\.subject\[0\]\.digest\.sha256: is f{64} but the listed resources hash to/)
    })

    test('a changed payload byte: the signature', async () => {
      const b = readBundle(policy().bundlePath)
      const payload = Buffer.from(b.dsseEnvelope.payload, 'base64')
      payload[payload.length - 2] ^= 0x20
      b.dsseEnvelope.payload = payload.toString('base64')
      await refusal(verifyModelSignature([MODEL], {...policy(), bundlePath: writeBundle('payload.sig', b)}))
    })

    test('another public key: the hint, and without a hint the signature', async () => {
      const wrong = {...policy(), publicKeyPath: keys['P-384']!.pub}
      assert.match((await refusal(verifyModelSignature([MODEL], wrong))).message, /publicKey\.hint: names another key/)
      const b = readBundle(policy().bundlePath)
      delete b.verificationMaterial.publicKey.hint
      const e = await refusal(verifyModelSignature([MODEL], {...wrong, bundlePath: writeBundle('nohint.sig', b)}))
      assert.match(e.message, /signatures\[0\]\.sig: does not verify under --model-pubkey \(P-384/)
    })

    test('another file at the path (swapped): refused before it is parsed or mapped', async () => {
      const swapped = join(dir, 'swapped', 'stories260K.gguf')
      openssl(['rand', '-out', join(dir, 'junk'), '1024'])
      rmSync(join(dir, 'swapped'), {recursive: true, force: true})
      mkdirSync(join(dir, 'swapped'))
      copyFileSync(join(dir, 'junk'), swapped)
      // Not a GGUF file: had the loader read it first, this would be a GGUF error, not the signature's.
      const e = await refusal(Model.load(swapped, {signature: policy()}))
      assert.equal(e.code, 'MODEL_SIGNATURE_REFUSED')
      assert.match(e.message, /has sha256 .*not the one signed/)
    })

    test('keys that are not ECDSA P-256/384/521 are refused by name', async () => {
      openssl(['genpkey', '-algorithm', 'ed25519', '-out', join(dir, 'ed.key')])
      openssl(['pkey', '-in', join(dir, 'ed.key'), '-pubout', '-out', join(dir, 'ed.pub')])
      openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:1024', '-out', join(dir, 'rsa.key')])
      openssl(['pkey', '-in', join(dir, 'rsa.key'), '-pubout', '-out', join(dir, 'rsa.pub')])
      const k1 = opensslEcKeys(dir, 'secp256k1')
      const cases = [
        [join(dir, 'ed.pub'), /an Ed25519 key, not an ECDSA P-256/],
        [join(dir, 'rsa.pub'), /an RSA key, not an ECDSA/],
        [k1.pub, /curve secp256k1, not an ECDSA/],
      ] as const
      for (const [pub, why] of cases) {
        const e = await refusal(verifyModelSignature([MODEL], {...policy(), publicKeyPath: pub}))
        assert.equal(e.code, 'MODEL_SIGNATURE_UNSUPPORTED')
        assert.match(e.message, why)
      }
      await assert.rejects(
        signModel({modelPath: MODEL, keyPath: join(dir, 'ed.key'), outPath: join(dir, 'x.sig')}),
        (e: Error & {code?: string}) => {
          assert.equal(e.code, 'SIGN_KEY_INVALID')
          assert.match(e.message, /--key .*an Ed25519 key/)
          return true
        },
      )
    })

    test('--require-signed-model without a bundle; a bundle without a key', async () => {
      const e = await refusal(Model.load(MODEL, {signature: {require: true}}))
      assert.equal(e.code, 'MODEL_SIGNATURE_REQUIRED')
      await assert.rejects(Model.load(MODEL, {signature: {bundlePath: policy().bundlePath}}), /--model-sig needs --model-pubkey/)
    })

    test('a verified model loads, and exposes the signature', async () => {
      const model = await Model.load(MODEL, {signature: policy()})
      try {
        assert.equal(model.signature?.keyFingerprint, opensslFingerprint(keys['P-256']!.pub))
      } finally {
        model.dispose()
      }
    })
  })

  describe('the files as mapped', () => {
    test('a file replaced at its path after hashing is refused', async () => {
      const path = join(dir, 'toctou.gguf')
      copyFileSync(MODEL, path)
      const hashed = await hashFile(path)
      await checkMappedFiles([hashed])
      copyFileSync(MODEL, join(dir, 'other.gguf'))
      renameSync(join(dir, 'other.gguf'), path)
      await assert.rejects(checkMappedFiles([hashed]), /changed between the signature check and the mapping: it is another file now/)
    })

    test('a file rewritten in place after hashing is refused', async () => {
      const path = join(dir, 'rewritten.gguf')
      copyFileSync(MODEL, path)
      const hashed = await hashFile(path)
      utimesSync(path, new Date(), new Date(Date.now() + 5000))
      await assert.rejects(checkMappedFiles([hashed]), /changed between the signature check and the mapping: it was modified/)
    })
  })
})

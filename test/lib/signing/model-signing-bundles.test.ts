// Bundles we did not write: model_signing's own test bundles (fixtures/model-signing/README.md,
// sigstore/model-transparency scripts/tests), signed by `model_signing sign key` with a P-384 key,
// which its CI verifies with `model_signing verify key`. Our verifier must accept them as they are,
// refuse them once altered, and refuse its certificate and keyless bundles as unsupported.
import assert from 'node:assert/strict'
import {cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {verifyModelSignature} from '../../../src/lib/signing/index.js'
import {REPO_ROOT} from '../../helpers/shared.js'

const F = join(REPO_ROOT, 'fixtures', 'model-signing')
const PUB = join(F, 'signing-key-pub.pem')
const dir = mkdtempSync(join(tmpdir(), 'runner-oms-'))
after(() => rmSync(dir, {recursive: true, force: true}))

/** certtool's "Public Key ID sha256" in the key file's own preamble: the fingerprint of the same DER SPKI. */
const CERTTOOL_KEY_ID = /Public Key ID:\s+sha1:[0-9a-f]+\s+sha256:([0-9a-f]{64})/.exec(readFileSync(PUB, 'utf8'))![1]!

async function refusal(p: Promise<unknown>): Promise<{code: string; exitCode: number; message: string}> {
  const e = (await p.then(
    () => assert.fail('expected a refusal'),
    (error: unknown) => error,
  )) as {code: string; exitCode: number; message: string}
  assert.equal(e.exitCode, 3, e.message)
  return e
}

for (const version of ['v1.0.1-elliptic-key', 'v1.1.0-elliptic-key']) {
  describe(`model_signing ${version} bundle`, () => {
    const files = [join(F, version, 'signme-1'), join(F, version, 'signme-2')]
    const policy = {bundlePath: join(F, version, 'model.sig'), publicKeyPath: PUB}

    test('verifies, with the key fingerprint certtool printed for the key', async () => {
      const v = await verifyModelSignature(files, policy)
      assert.ok(v)
      assert.equal(v.curve, 'P-384')
      assert.equal(v.keyFingerprint, CERTTOOL_KEY_ID)
      assert.deepEqual(
        v.files.map((f) => f.name),
        ['signme-1', 'signme-2'],
      )
    })

    test('a changed file is refused by its digest', async () => {
      const d = join(dir, `${version}-changed`)
      cpSync(join(F, version), d, {recursive: true})
      writeFileSync(join(d, 'signme-1'), 'tampered')
      const e = await refusal(verifyModelSignature([join(d, 'signme-1'), join(d, 'signme-2')], policy))
      assert.equal(e.code, 'MODEL_SIGNATURE_REFUSED')
      assert.match(e.message, /signme-1.*has sha256 .*not the one signed/)
    })

    test('a model with one of the files missing is refused (the other is listed, not part of it)', async () => {
      const e = await refusal(verifyModelSignature([files[0]!], policy))
      assert.match(e.message, /statement\.predicate\.resources "signme-2": is not a file of this model/)
    })

    test('a changed payload byte is refused by the signature', async () => {
      const bundle = JSON.parse(readFileSync(policy.bundlePath, 'utf8')) as {dsseEnvelope: {payload: string}}
      const payload = Buffer.from(bundle.dsseEnvelope.payload, 'base64')
      bundle.dsseEnvelope.payload = Buffer.from(payload.toString('utf8').replace('signme-2', 'signme-3')).toString('base64')
      const forged = join(dir, `${version}-payload.sig`)
      writeFileSync(forged, JSON.stringify(bundle))
      const e = await refusal(verifyModelSignature(files, {...policy, bundlePath: forged}))
      assert.match(e.message, /dsseEnvelope\.signatures\[0\]\.sig: does not verify/)
    })
  })
}

test("model_signing's certificate bundle is refused as unsupported, by name", async () => {
  const e = await refusal(verifyModelSignature([PUB], {bundlePath: join(F, 'v1.1.0-certificate', 'model.sig'), publicKeyPath: PUB}))
  assert.equal(e.code, 'MODEL_SIGNATURE_UNSUPPORTED')
  assert.match(e.message, /verificationMaterial\.x509CertificateChain: certificate bundles are not supported/)
})

test("model_signing's keyless (Sigstore/Fulcio) bundle is refused as unsupported, by name", async () => {
  const e = await refusal(verifyModelSignature([PUB], {bundlePath: join(F, 'v1.1.0-sigstore', 'model.sig'), publicKeyPath: PUB}))
  assert.equal(e.code, 'MODEL_SIGNATURE_UNSUPPORTED')
  assert.match(e.message, /verificationMaterial\.certificate: certificate \(keyless \/ Fulcio\) bundles are not supported.*runner sign/)
})

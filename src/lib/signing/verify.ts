/**
 * Checking a model against an OMS bundle and a public key, before anything of the model is mapped:
 * the bundle's structure, the key (hint), the ECDSA signature over the DSSE PAE, the statement
 * (types, root digest), that the listed files are exactly the model's files, and finally each
 * file's sha256 (the slow part, last). Any failure refuses the model (exit 3).
 */
import {createHash, verify as ecdsaVerify} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import {basename} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../text/index.js'
import {parseBundle, type ParsedBundle} from './bundle.js'
import {preAuthEncoding} from './dsse.js'
import {refused, SIGNATURE_REQUIRED} from './errors.js'
import {type CurveName, PREDICATE_TYPE, type Resource, SINGLE_FILE_RESOURCE} from './format.js'
import {type FileIdentity, hashFiles, type HashProgress} from './files.js'
import {type EcPublicKey, parsePublicKey, readPublicKeyFile} from './keys.js'
import {parseStatement, type Statement} from './statement.js'

/** What a command asks of a model's signature (--model-sig, --model-pubkey, --require-signed-model). */
export interface SignaturePolicy {
  readonly bundlePath?: string
  readonly publicKeyPath?: string
  /** Refuse to load a model without a verified signature. */
  readonly require?: boolean
}

export interface VerifiedFile {
  /** Absolute path. */
  readonly path: string
  /** The resource name the statement lists it under. */
  readonly name: string
  readonly bytes: number
  readonly sha256: string
  /** The file as hashed (device, inode, size, mtime, ctime): checked again once the engine has mapped it. */
  readonly identity: FileIdentity
}

export interface VerifiedSignature {
  /** sha256 hex of the signer's public key, DER SubjectPublicKeyInfo. */
  readonly keyFingerprint: string
  readonly curve: CurveName
  readonly predicateType: typeof PREDICATE_TYPE
  readonly bundlePath: string
  /** sha256 hex of the bundle file's bytes. */
  readonly bundleSha256: string
  /** The statement's subject: the model's name (informative) and root digest. */
  readonly subjectName: string
  readonly rootDigest: string
  readonly files: readonly VerifiedFile[]
}

export interface VerifyOptions {
  /** Bytes hashed so far of the total (a multi-GB model takes a while). */
  readonly onProgress?: HashProgress
}

/** The policy's flags belong together: one without the other is a usage error (exit 2). */
export function checkSignaturePolicy(policy: SignaturePolicy): void {
  if (policy.bundlePath !== undefined && policy.publicKeyPath === undefined)
    throw new RunnerError(
      'SIGNATURE_FLAGS',
      '--model-sig needs --model-pubkey: the public key (PEM) the bundle was signed with',
      ExitCode.usage,
    )
  if (policy.publicKeyPath !== undefined && policy.bundlePath === undefined)
    throw new RunnerError(
      'SIGNATURE_FLAGS',
      '--model-pubkey needs --model-sig: the signature bundle to check (runner sign writes one)',
      ExitCode.usage,
    )
}

/** The bundle's key material must name the key given (model_signing checks the hint the same way). */
function checkKeyMaterial(bundle: ParsedBundle, key: EcPublicKey): void {
  if (bundle.hint !== undefined && bundle.hint !== key.hint)
    throw refused(
      'verificationMaterial.publicKey.hint',
      `names another key than --model-pubkey (wrong public key: the bundle's hint is ${bundle.hint}, the key's ${key.hint})`,
    )
  if (bundle.rawKey !== undefined) {
    const inBundle = parsePublicKey(bundle.rawKey, 'verificationMaterial.publicKey.rawBytes')
    if (inBundle.fingerprint !== key.fingerprint)
      throw refused(
        'verificationMaterial.publicKey.rawBytes',
        `is another key than --model-pubkey (wrong public key: ${inBundle.fingerprint})`,
      )
  }
  const details = {'P-256': 'PKIX_ECDSA_P256_SHA_256', 'P-384': 'PKIX_ECDSA_P384_SHA_384', 'P-521': 'PKIX_ECDSA_P521_SHA_512'}[key.curve]
  if (bundle.keyDetails !== undefined && bundle.keyDetails !== details)
    throw refused(
      'verificationMaterial.publicKey.keyDetails',
      `says ${JSON.stringify(bundle.keyDetails)}, but --model-pubkey is a ${key.curve} key (${details})`,
    )
}

/** The signature over the PAE and the statement it signs; nothing of the model is read. */
export function verifyBundle(bundleBytes: Buffer, key: EcPublicKey): Statement {
  const bundle = parseBundle(bundleBytes)
  checkKeyMaterial(bundle, key)
  const pae = preAuthEncoding(bundle.payloadType, bundle.payload)
  let ok = false
  try {
    ok = ecdsaVerify(key.hash, pae, {key: key.key, dsaEncoding: 'der'}, bundle.signature)
  } catch {
    ok = false
  }
  if (!ok)
    throw refused(
      'dsseEnvelope.signatures[0].sig',
      `does not verify under --model-pubkey (${key.curve}, ${key.hash}, fingerprint ${key.fingerprint}): the bundle was altered or signed with another key`,
    )
  return parseStatement(bundle.payload)
}

/**
 * Which resource is which model file. The model is its GGUF file (or every shard of a split one):
 * the statement must list exactly those, no fewer and no more. One file is listed as model_signing
 * lists a model that is one file (".") or by its name (a folder holding only it was signed); shards
 * by their file names (the folder they share was signed). A resource that is no file of the model
 * (a README signed with the folder) is refused: sign the model's files alone (runner sign does).
 */
export function matchResources(statement: Statement, paths: readonly string[]): {path: string; resource: Resource}[] {
  const byName = new Map(statement.resources.map((r) => [r.name, r]))
  const names = paths.map((p) => basename(p))
  if (paths.length === 1 && byName.has(SINGLE_FILE_RESOURCE) && statement.resources.length === 1)
    return [{path: paths[0]!, resource: byName.get(SINGLE_FILE_RESOURCE)!}]
  const matched = paths.map((path, i) => {
    const resource = byName.get(names[i]!)
    if (!resource)
      throw refused(
        `model file ${quoted(names[i]!)}`,
        'is not listed in the signature (statement.predicate.resources): the bundle does not sign this model',
      )
    return {path, resource}
  })
  const extra = statement.resources.find((r) => !names.includes(r.name))
  if (extra)
    throw refused(
      `statement.predicate.resources ${quoted(extra.name)}`,
      `is not a file of this model (${names.map((n) => quoted(n)).join(', ')}); runner checks exactly the model's GGUF files: sign those alone`,
    )
  return matched
}

/**
 * Check the model files `paths` (a GGUF file, or every shard of a split one) against the policy.
 * Undefined when no signature was asked for; a RunnerError (exit 3) when one is refused or required
 * but not given. Nothing is mapped: this runs before the engine loads anything.
 */
export async function verifyModelSignature(
  paths: readonly string[],
  policy: SignaturePolicy,
  options: VerifyOptions = {},
): Promise<VerifiedSignature | undefined> {
  checkSignaturePolicy(policy)
  if (policy.bundlePath === undefined || policy.publicKeyPath === undefined) {
    if (policy.require)
      throw new RunnerError(
        SIGNATURE_REQUIRED,
        'model signature required (--require-signed-model) but none was given: pass --model-sig BUNDLE and --model-pubkey PEM (runner sign makes a bundle)',
        ExitCode.invalidModel,
      )
    return undefined
  }
  if (paths.length === 0) throw refused('model', 'has no files')
  let bundleBytes: Buffer
  try {
    bundleBytes = await readFile(policy.bundlePath)
  } catch (error) {
    throw refused(
      `--model-sig ${quoted(policy.bundlePath)}`,
      `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      error,
    )
  }
  const key = await readPublicKeyFile(policy.publicKeyPath)
  const statement = verifyBundle(bundleBytes, key)
  const matched = matchResources(statement, paths)
  const hashed = await hashFiles(
    matched.map((m) => m.path),
    options.onProgress,
  )
  const files = matched.map(({resource}, i): VerifiedFile => {
    const h = hashed[i]!
    if (h.sha256 !== resource.digest)
      throw refused(
        `model file ${quoted(h.path)}`,
        `has sha256 ${h.sha256}, the signature lists ${quoted(resource.name)} with ${resource.digest}: the file is not the one signed`,
      )
    return {path: h.path, name: resource.name, bytes: h.bytes, sha256: h.sha256, identity: h.identity}
  })
  return {
    keyFingerprint: key.fingerprint,
    curve: key.curve,
    predicateType: PREDICATE_TYPE,
    bundlePath: policy.bundlePath,
    bundleSha256: createHash('sha256').update(bundleBytes).digest('hex'),
    subjectName: statement.subjectName,
    rootDigest: statement.rootDigest,
    files,
  }
}

/** What a command reports of a verified signature (--json and the library's model info). */
export interface ModelSignatureSummary {
  readonly keyFingerprint: string
  readonly curve: CurveName
  readonly bundle: string
  readonly bundleSha256: string
  readonly files: readonly {readonly name: string; readonly sha256: string}[]
}

export function modelSignatureSummary(s: VerifiedSignature): ModelSignatureSummary {
  return {
    keyFingerprint: s.keyFingerprint,
    curve: s.curve,
    bundle: s.bundlePath,
    bundleSha256: s.bundleSha256,
    files: s.files.map((f) => ({name: f.name, sha256: f.sha256})),
  }
}

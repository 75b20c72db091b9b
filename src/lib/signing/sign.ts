/**
 * `runner sign`: an OMS bundle for a model and the user's own ECDSA key, in the shape model_signing
 * v1.x writes for `model_signing sign key` (so its verifier, and ours, read it): a Sigstore bundle
 * v0.3 with the key's hint, no transparency log, and a DSSE envelope over the in-toto statement.
 */
import {sign as ecdsaSign} from 'node:crypto'
import {basename, dirname, resolve} from 'node:path'

import {readGgufModel} from '../gguf/index.js'
import {checkOutputPath, writeFileAtomic} from '../util/index.js'
import {preAuthEncoding} from './dsse.js'
import {BUNDLE_MEDIA_TYPE, type CurveName, HASH_TYPE, PAYLOAD_TYPE, type Resource, SINGLE_FILE_RESOURCE} from './format.js'
import {hashFiles, type HashProgress} from './files.js'
import {readPrivateKeyFile} from './keys.js'
import {buildStatement, rootDigest} from './statement.js'

export interface SignOptions {
  readonly modelPath: string
  readonly keyPath: string
  /** Default: `<model file>.sig` beside the model (the first shard's name for a split model). */
  readonly outPath?: string
  /** Replace an existing bundle. */
  readonly force?: boolean
  readonly onProgress?: HashProgress
}

export interface SignReport {
  readonly bundlePath: string
  readonly keyFingerprint: string
  readonly curve: CurveName
  readonly rootDigest: string
  readonly files: readonly {readonly path: string; readonly name: string; readonly bytes: number; readonly sha256: string}[]
}

export function defaultBundlePath(modelPath: string): string {
  return `${modelPath}.sig`
}

/** The bundle's bytes for `resources` signed with `key` (compact JSON, model_signing's key order). */
export function bundleBytes(statement: Buffer, signature: Buffer, hint: string): Buffer {
  const bundle = {
    mediaType: BUNDLE_MEDIA_TYPE,
    verificationMaterial: {publicKey: {hint}, tlogEntries: []},
    dsseEnvelope: {
      payload: statement.toString('base64'),
      payloadType: PAYLOAD_TYPE,
      signatures: [{sig: signature.toString('base64'), keyid: ''}],
    },
  }
  return Buffer.from(JSON.stringify(bundle), 'utf8')
}

export async function signModel(options: SignOptions): Promise<SignReport> {
  // The key and the output are checked before hours of hashing; the model must be a GGUF model (every shard present).
  const key = await readPrivateKeyFile(options.keyPath)
  const outPath = options.outPath ?? defaultBundlePath(options.modelPath)
  await checkOutputPath(outPath, {replace: options.force === true})
  const paths = readGgufModel(options.modelPath).shards.map((s) => resolve(s.path))
  const hashed = await hashFiles(paths, options.onProgress)
  // model_signing names the one resource of a single-file model "." and its subject after the file;
  // a split model is the folder of its shards, each named by its file name.
  const single = paths.length === 1
  const resources: Resource[] = hashed.map((h) => ({
    name: single ? SINGLE_FILE_RESOURCE : basename(h.path),
    algorithm: HASH_TYPE,
    digest: h.sha256,
  }))
  const subjectName = single ? basename(paths[0]!) : basename(dirname(paths[0]!))
  const statement = buildStatement(subjectName, resources)
  const signature = ecdsaSign(key.hash, preAuthEncoding(PAYLOAD_TYPE, statement), {key: key.privateKey, dsaEncoding: 'der'})
  await writeFileAtomic(outPath, bundleBytes(statement, signature, key.hint), {exclusive: options.force !== true})
  return {
    bundlePath: outPath,
    keyFingerprint: key.fingerprint,
    curve: key.curve,
    rootDigest: rootDigest([...resources].sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)))),
    files: hashed.map((h, i) => ({path: h.path, name: resources[i]!.name, bytes: h.bytes, sha256: h.sha256})),
  }
}

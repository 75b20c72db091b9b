/**
 * Reading a model signature bundle: the Sigstore bundle v0.3 JSON that model_signing writes for a
 * key (verificationMaterial.publicKey, no transparency log, a DSSE envelope with one signature).
 * Only its structure is checked here; the signature and the statement are checked by verify.ts.
 * Certificate and keyless (Fulcio) bundles, transparency-log entries and timestamps are refused as
 * unsupported by name: runner checks none of them, so it never passes one.
 */
import {unsupported, refused} from './errors.js'
import {BUNDLE_MEDIA_TYPE, PAYLOAD_TYPE} from './format.js'

export interface ParsedBundle {
  /** The DSSE payload (the in-toto statement's JSON bytes). */
  readonly payload: Buffer
  readonly payloadType: string
  /** The one signature: DER ECDSA over the PAE of the payload. */
  readonly signature: Buffer
  /** model_signing's verificationMaterial.publicKey.hint (sha256 hex of the PEM public key), when present. */
  readonly hint?: string
  /** model_signing before v1.1 put the key itself in publicKey.rawBytes (and keyDetails). */
  readonly rawKey?: Buffer
  readonly keyDetails?: string
}

/** A bundle is a few kilobytes for any model (one line per file): anything this large is not one. */
export const MAX_BUNDLE_BYTES = 16 << 20

const NOT_SUPPORTED_SIGN_WITH_KEY = 'sign with a key (runner sign) and pass --model-pubkey'

type Json = Record<string, unknown>

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function object(parent: Json, key: string, field: string): Json {
  const v = parent[key]
  if (!isObject(v)) throw refused(field, v === undefined ? 'is missing' : 'is not an object')
  return v
}

function onlyKeys(obj: Json, allowed: readonly string[], field: string): void {
  for (const k of Object.keys(obj))
    if (!allowed.includes(k)) throw refused(`${field}.${k}`, 'is not a field of a model signing key bundle (refused, not ignored)')
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** Standard or URL-safe base64 (protobuf's JSON accepts both), refused when it is anything else. */
export function decodeBase64(v: unknown, field: string): Buffer {
  if (typeof v !== 'string') throw refused(field, v === undefined ? 'is missing' : 'is not a base64 string')
  if (!BASE64.test(v) || v.replace(/=+$/, '').length % 4 === 1) throw refused(field, 'is not valid base64')
  return Buffer.from(v, 'base64')
}

export function parseBundle(bytes: Buffer): ParsedBundle {
  if (bytes.length > MAX_BUNDLE_BYTES)
    throw refused('bundle', `is ${bytes.length} bytes, more than any model signature (${MAX_BUNDLE_BYTES})`)
  let root: unknown
  try {
    root = JSON.parse(bytes.toString('utf8'))
  } catch (error) {
    throw refused('bundle', `is not JSON (${(error as Error).message})`, error)
  }
  if (!isObject(root)) throw refused('bundle', 'is not a JSON object')
  if (root.mediaType !== BUNDLE_MEDIA_TYPE)
    throw refused('mediaType', `must be ${BUNDLE_MEDIA_TYPE} (model_signing's bundle), got ${JSON.stringify(root.mediaType ?? null)}`)
  const material = object(root, 'verificationMaterial', 'verificationMaterial')
  if (material.certificate !== undefined)
    throw unsupported(
      'verificationMaterial.certificate',
      `certificate (keyless / Fulcio) bundles are not supported; ${NOT_SUPPORTED_SIGN_WITH_KEY}`,
    )
  if (material.x509CertificateChain !== undefined)
    throw unsupported('verificationMaterial.x509CertificateChain', `certificate bundles are not supported; ${NOT_SUPPORTED_SIGN_WITH_KEY}`)
  if (root.messageSignature !== undefined)
    throw unsupported('messageSignature', 'a signature over a digest is not a model signature (model signing uses dsseEnvelope)')
  onlyKeys(root, ['mediaType', 'verificationMaterial', 'dsseEnvelope'], 'bundle')
  onlyKeys(material, ['publicKey', 'tlogEntries', 'timestampVerificationData'], 'verificationMaterial')
  const tlog = material.tlogEntries
  if (tlog !== undefined && !Array.isArray(tlog)) throw refused('verificationMaterial.tlogEntries', 'is not a list')
  if (Array.isArray(tlog) && tlog.length > 0)
    throw unsupported(
      'verificationMaterial.tlogEntries',
      'transparency log entries are not checked by runner (a key bundle has none); refused rather than ignored',
    )
  const stamps = material.timestampVerificationData
  if (stamps !== undefined && !(isObject(stamps) && Object.values(stamps).every((v) => Array.isArray(v) && v.length === 0)))
    throw unsupported(
      'verificationMaterial.timestampVerificationData',
      'signed timestamps are not checked by runner; refused rather than ignored',
    )

  const publicKey = object(material, 'publicKey', 'verificationMaterial.publicKey')
  onlyKeys(publicKey, ['hint', 'rawBytes', 'keyDetails'], 'verificationMaterial.publicKey')
  const hint = publicKey.hint
  if (hint !== undefined && hint !== null && typeof hint !== 'string')
    throw refused('verificationMaterial.publicKey.hint', 'is not a string')
  const rawKey = publicKey.rawBytes === undefined ? undefined : decodeBase64(publicKey.rawBytes, 'verificationMaterial.publicKey.rawBytes')
  const keyDetails = publicKey.keyDetails
  if (keyDetails !== undefined && typeof keyDetails !== 'string')
    throw refused('verificationMaterial.publicKey.keyDetails', 'is not a string')

  const envelope = object(root, 'dsseEnvelope', 'dsseEnvelope')
  onlyKeys(envelope, ['payload', 'payloadType', 'signatures'], 'dsseEnvelope')
  if (envelope.payloadType !== PAYLOAD_TYPE)
    throw refused('dsseEnvelope.payloadType', `must be ${PAYLOAD_TYPE}, got ${JSON.stringify(envelope.payloadType ?? null)}`)
  const payload = decodeBase64(envelope.payload, 'dsseEnvelope.payload')
  if (payload.length === 0) throw refused('dsseEnvelope.payload', 'is empty')
  const signatures = envelope.signatures
  if (!Array.isArray(signatures)) throw refused('dsseEnvelope.signatures', signatures === undefined ? 'is missing' : 'is not a list')
  if (signatures.length !== 1)
    throw refused('dsseEnvelope.signatures', `has ${signatures.length} signatures; a model signing key bundle has exactly one`)
  const first: unknown = signatures[0]
  if (!isObject(first)) throw refused('dsseEnvelope.signatures[0]', 'is not an object')
  onlyKeys(first, ['sig', 'keyid'], 'dsseEnvelope.signatures[0]')
  if (first.keyid !== undefined && first.keyid !== null && typeof first.keyid !== 'string')
    throw refused('dsseEnvelope.signatures[0].keyid', 'is not a string')
  const signature = decodeBase64(first.sig, 'dsseEnvelope.signatures[0].sig')
  if (signature.length === 0) throw refused('dsseEnvelope.signatures[0].sig', 'is empty')
  return {
    payload,
    payloadType: PAYLOAD_TYPE,
    signature,
    ...(typeof hint === 'string' && hint !== '' ? {hint} : {}),
    ...(rawKey ? {rawKey} : {}),
    ...(typeof keyDetails === 'string' ? {keyDetails} : {}),
  }
}

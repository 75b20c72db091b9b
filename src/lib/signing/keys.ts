/**
 * The ECDSA keys model signing uses: P-256, P-384 or P-521 (model_signing's _SUPPORTED_CURVES), in
 * PEM or DER. Any other key (Ed25519, RSA, secp256k1...) is refused by name. A key's fingerprint is
 * the sha256 of its DER SubjectPublicKeyInfo (what `openssl pkey -pubin -outform DER | sha256sum`
 * prints); its hint is model_signing's: the sha256 of the PEM SubjectPublicKeyInfo text.
 */
import {createHash, createPrivateKey, createPublicKey, type KeyObject} from 'node:crypto'
import {readFile} from 'node:fs/promises'

import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../text/index.js'
import {refused, unsupported} from './errors.js'
import {CURVES, type CurveName, type HashName} from './format.js'

export interface EcPublicKey {
  readonly key: KeyObject
  readonly curve: CurveName
  readonly hash: HashName
  /** sha256 hex of the DER SubjectPublicKeyInfo. */
  readonly fingerprint: string
  /** sha256 hex of the PEM SubjectPublicKeyInfo (model_signing's verificationMaterial.publicKey.hint). */
  readonly hint: string
}

export interface EcPrivateKey extends EcPublicKey {
  readonly privateKey: KeyObject
}

/** How a key that is not one of the three curves is named in a refusal. */
function keyKind(key: KeyObject): string {
  const type = key.asymmetricKeyType ?? 'unknown'
  const names: Record<string, string> = {
    ed25519: 'an Ed25519',
    ed448: 'an Ed448',
    rsa: 'an RSA',
    'rsa-pss': 'an RSA-PSS',
    dsa: 'a DSA',
    x25519: 'an X25519',
  }
  if (type === 'ec') return `an EC key on curve ${key.asymmetricKeyDetails?.namedCurve ?? 'unknown'}, not`
  return `${names[type] ?? `a ${type}`} key, not`
}

/** The curve and hash of an EC public key, or the reason it is not one of the supported three. */
function curveOf(key: KeyObject): {curve: CurveName; hash: HashName} | string {
  const named = key.asymmetricKeyType === 'ec' ? key.asymmetricKeyDetails?.namedCurve : undefined
  const entry = named !== undefined && Object.hasOwn(CURVES, named) ? CURVES[named as keyof typeof CURVES] : undefined
  if (!entry) return `${keyKind(key)} an ECDSA P-256, P-384 or P-521 key (model signing's key types)`
  return {curve: entry.name, hash: entry.hash}
}

export function describePublicKey(key: KeyObject, curve: CurveName, hash: HashName): EcPublicKey {
  const der = key.export({type: 'spki', format: 'der'})
  const pem = key.export({type: 'spki', format: 'pem'})
  return {
    key,
    curve,
    hash,
    fingerprint: createHash('sha256').update(der).digest('hex'),
    hint: createHash('sha256').update(pem).digest('hex'),
  }
}

async function readKeyFile(path: string, field: string): Promise<Buffer> {
  try {
    return await readFile(path)
  } catch (error) {
    throw refused(
      `${field} ${quoted(path)}`,
      `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      error,
    )
  }
}

/** An EC public key from bytes (PEM SubjectPublicKeyInfo, or DER), for `field` in refusals. */
export function parsePublicKey(bytes: Buffer, field: string): EcPublicKey {
  let key: KeyObject
  try {
    const isPem = bytes.includes('-----BEGIN')
    key = isPem ? createPublicKey({key: bytes, format: 'pem'}) : createPublicKey({key: bytes, format: 'der', type: 'spki'})
  } catch (error) {
    throw refused(field, 'is not a public key (PEM "BEGIN PUBLIC KEY" or DER SubjectPublicKeyInfo)', error)
  }
  const c = curveOf(key)
  if (typeof c === 'string') throw unsupported(field, `${c}; make one with: openssl ecparam -name prime256v1 -genkey -noout -out key.pem`)
  return describePublicKey(key, c.curve, c.hash)
}

/** --model-pubkey: an ECDSA P-256/384/521 public key file. */
export async function readPublicKeyFile(path: string, field = '--model-pubkey'): Promise<EcPublicKey> {
  return parsePublicKey(await readKeyFile(path, field), `${field} ${quoted(path)}`)
}

/** `runner sign --key`: an unencrypted ECDSA P-256/384/521 private key (PEM: SEC1 or PKCS#8). Refusals are usage errors. */
export async function readPrivateKeyFile(path: string, field = '--key'): Promise<EcPrivateKey> {
  const where = `${field} ${quoted(path)}`
  const bad = (why: string, cause?: unknown) => new RunnerError('SIGN_KEY_INVALID', `${where}: ${why}`, ExitCode.usage, {cause})
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    throw bad(`cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, error)
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey({key: bytes, format: 'pem'})
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ERR_MISSING_PASSPHRASE')
      throw bad('is encrypted; runner sign reads unencrypted keys (openssl ec -in KEY -out PLAIN.pem, kept private)', error)
    throw bad('is not a PEM private key (openssl ecparam -name prime256v1 -genkey -noout -out key.pem makes one)', error)
  }
  const publicKey = createPublicKey(privateKey)
  const c = curveOf(publicKey)
  if (typeof c === 'string') throw bad(c)
  return {...describePublicKey(publicKey, c.curve, c.hash), privateKey}
}

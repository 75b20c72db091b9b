import * as ed from '@noble/ed25519'
import {readFile} from 'node:fs/promises'

import {ExitCode, RunnerError} from '../errors.js'

/**
 * Ed25519 keys as PEM files that OpenSSL and node:crypto read too: the private key as PKCS#8
 * ("BEGIN PRIVATE KEY"), the public key as SPKI ("BEGIN PUBLIC KEY"). Both DER forms are a fixed
 * prefix (RFC 8410) followed by the 32 raw key bytes, which is all @noble/ed25519 needs.
 */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

export interface KeyPair {
  readonly secretKey: Uint8Array
  readonly publicKey: Uint8Array
}

export async function generateKeyPair(): Promise<KeyPair> {
  const secretKey = ed.utils.randomSecretKey()
  return {secretKey, publicKey: await ed.getPublicKeyAsync(secretKey)}
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? []
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`
}

export const privateKeyPem = (secretKey: Uint8Array) => pem('PRIVATE KEY', Buffer.concat([PKCS8_PREFIX, secretKey]))
export const publicKeyPem = (publicKey: Uint8Array) => pem('PUBLIC KEY', Buffer.concat([SPKI_PREFIX, publicKey]))

function derFromPem(text: string, label: string): Buffer | undefined {
  const m = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+)-----END ${label}-----`).exec(text)
  return m ? Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64') : undefined
}

function rawKey(der: Buffer | undefined, prefix: Buffer, what: string, where: string): Uint8Array {
  if (!der || der.length !== prefix.length + 32 || !der.subarray(0, prefix.length).equals(prefix)) {
    throw new RunnerError('KEY_INVALID', `${where} is not an Ed25519 ${what} in PEM form (runner keygen writes one)`, ExitCode.usage)
  }
  return new Uint8Array(der.subarray(prefix.length))
}

async function readKeyFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    throw new RunnerError('KEY_UNREADABLE', `cannot read the key file ${path}: ${(error as Error).message}`, ExitCode.usage)
  }
}

/** The secret key of a PKCS#8 PEM file (runner keygen's NAME.key, or `openssl genpkey -algorithm ed25519`). */
export async function readSecretKey(path: string): Promise<KeyPair> {
  const secretKey = rawKey(derFromPem(await readKeyFile(path), 'PRIVATE KEY'), PKCS8_PREFIX, 'private key', path)
  return {secretKey, publicKey: await ed.getPublicKeyAsync(secretKey)}
}

/** A public key given as a SPKI PEM file or as 64 hex digits (as receipts and keygen print it). */
export async function readPublicKey(spec: string): Promise<Uint8Array> {
  if (/^[0-9a-fA-F]{64}$/.test(spec)) return new Uint8Array(Buffer.from(spec, 'hex'))
  return rawKey(derFromPem(await readKeyFile(spec), 'PUBLIC KEY'), SPKI_PREFIX, 'public key', spec)
}

export async function sign(message: Uint8Array, secretKey: Uint8Array): Promise<Uint8Array> {
  return ed.signAsync(message, secretKey)
}

/**
 * False for a bad signature, for bytes that are not a signature or a key, and for a small-order
 * public key (with one, a crafted signature verifies for any message). RFC 8032's strict rules
 * (zip215: false): non-canonical encodings are refused.
 */
export async function verifySignature(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): Promise<boolean> {
  try {
    if (ed.Point.fromBytes(publicKey).isSmallOrder()) return false
    return await ed.verifyAsync(signature, message, publicKey, {zip215: false})
  } catch {
    return false
  }
}

export const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

// openssl as an outside anchor: it makes the keys and checks raw signatures. Tests skip with this
// reason when it is not installed.
import {spawnSync} from 'node:child_process'

export const HAS_OPENSSL = spawnSync('openssl', ['version'], {encoding: 'utf8'}).status === 0
export const NO_OPENSSL_REASON = 'openssl is not installed'

/** Run openssl; throws with its stderr when it fails. */
export function openssl(args: string[], input?: Buffer): Buffer {
  const r = spawnSync('openssl', args, {input})
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr.toString()}`)
  return r.stdout
}

/** The status of an openssl command that may fail (dgst -verify says "Verified OK" or fails). */
export function opensslStatus(args: string[]): {status: number | null; out: string} {
  const r = spawnSync('openssl', args, {encoding: 'utf8'})
  return {status: r.status, out: `${r.stdout}${r.stderr}`}
}

/** An EC key pair made by openssl: `ecparam -genkey`, then `ec -pubout`. */
export function opensslEcKeys(dir: string, curve: string): {key: string; pub: string} {
  const key = `${dir}/${curve}.key.pem`
  const pub = `${dir}/${curve}.pub.pem`
  openssl(['ecparam', '-name', curve, '-genkey', '-noout', '-out', key])
  openssl(['ec', '-in', key, '-pubout', '-out', pub])
  return {key, pub}
}

/** sha256 hex of the public key's DER SubjectPublicKeyInfo, as openssl writes it (`pkey -pubin -outform DER`). */
export function opensslFingerprint(pub: string): string {
  return openssl(['dgst', '-sha256', '-r'], openssl(['pkey', '-pubin', '-in', pub, '-outform', 'DER']))
    .toString()
    .split(' ')[0]!
}

import {ExitCode, RunnerError} from '../errors.js'
import {checkOutputPath, writeFilesAtomic} from '../util/index.js'
import {generateKeyPair, hex, privateKeyPem, publicKeyPem} from './keys.js'

export interface KeyPairFiles {
  /** The public key as 64 hex digits (what receipts record and --trust-key accepts). */
  readonly publicKey: string
  readonly privateKeyFile: string
  readonly publicKeyFile: string
}

const refuse = (code: string, message: string) => new RunnerError(code, message, ExitCode.usage)

/**
 * What to say when NAME.key or NAME.pub is already there, by which of them is. A lone half is what
 * an interrupted keygen of earlier versions left (or a file someone removed): the message says how
 * to recover it. None of these is replaced without --force.
 */
function existingPairError(out: string, keyFile: string, pubFile: string, hasKey: boolean, hasPub: boolean): RunnerError {
  if (hasKey && hasPub)
    return refuse(
      'KEY_EXISTS',
      `a key pair already exists as ${keyFile} and ${pubFile}; keygen replaces one only with --force (the old private key is then lost): choose another --out, or pass --force`,
    )
  if (hasKey)
    return refuse(
      'KEY_HALF_PAIR',
      `${keyFile} exists without ${pubFile} (an earlier keygen was cut off between the two files, or ${pubFile} was removed). ` +
        `To keep that key, write its public half with \`openssl pkey -in ${keyFile} -pubout -out ${pubFile}\`; ` +
        `to replace it with a new pair, run \`runner keygen --out ${out} --force\``,
    )
  return refuse(
    'KEY_HALF_PAIR',
    `${pubFile} exists without ${keyFile}: its private half is gone and cannot be recovered. ` +
      `Run \`runner keygen --out ${out} --force\` to write a new pair (and stop trusting the old ${pubFile}), or choose another --out`,
  )
}

/**
 * `runner keygen`: a new Ed25519 pair as NAME.key (PKCS#8 PEM, mode 0600) and NAME.pub (SPKI PEM),
 * both or neither (writeFilesAtomic: both written and fsynced under temporary names, then published;
 * when the second cannot be, the first is removed again). Existing files are refused by what is
 * there; with `force` the new pair replaces them.
 */
export async function createKeyPairFiles(out: string, options: {readonly force?: boolean} = {}): Promise<KeyPairFiles> {
  const privateKeyFile = `${out}.key`
  const publicKeyFile = `${out}.pub`
  const [key, pub] = [await checkOutputPath(privateKeyFile, {replace: true}), await checkOutputPath(publicKeyFile, {replace: true})]
  if ((key.exists || pub.exists) && !options.force) throw existingPairError(out, privateKeyFile, publicKeyFile, key.exists, pub.exists)
  const pair = await generateKeyPair()
  try {
    await writeFilesAtomic(
      [
        {path: privateKeyFile, data: privateKeyPem(pair.secretKey), mode: 0o600},
        {path: publicKeyFile, data: publicKeyPem(pair.publicKey)},
      ],
      // Without --force, a file that appears meanwhile is not replaced either. With it, the old pair is
      // replaced only once both new halves are on the disk (a full disk leaves the old pair as it was).
      {exclusive: !options.force},
    )
  } catch (error) {
    if (error instanceof RunnerError && error.code === 'OUTPUT_EXISTS')
      throw refuse('KEY_EXISTS', `${privateKeyFile} or ${publicKeyFile} appeared while writing; nothing was replaced`)
    throw error
  }
  return {publicKey: hex(pair.publicKey), privateKeyFile, publicKeyFile}
}

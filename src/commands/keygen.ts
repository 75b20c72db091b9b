import {Flags} from '@oclif/core'
import {existsSync} from 'node:fs'

import {RunnerCommand} from '../lib/cli/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {generateKeyPair, hex, privateKeyPem, publicKeyPem} from '../lib/receipt/index.js'
import {writeFileAtomic} from '../lib/util/index.js'

export default class Keygen extends RunnerCommand {
  static override summary = 'Create an Ed25519 key pair for signing receipts.'
  static override description =
    'Writes NAME.key (the private key, PKCS#8 PEM, mode 0600) and NAME.pub (the public key, SPKI PEM), and prints the ' +
    'public key as 64 hex digits, the form receipts record and `runner verify --trust-key` accepts. OpenSSL and ' +
    'node:crypto read both files. An existing file is never replaced. Give NAME.key to `runner run --sign-key`; publish NAME.pub.'

  static override examples = [
    {description: 'A key pair named alice (alice.key, alice.pub)', command: '<%= config.bin %> keygen --out alice'},
    {
      description: 'Sign a receipt with it',
      command: '<%= config.bin %> run -m model.gguf -p "Hello" --transcript r.json --sign-key alice.key',
    },
    {
      description: 'Check a receipt against the public key',
      command: '<%= config.bin %> verify r.json -m model.gguf --trust-key alice.pub --require-signed',
    },
  ]

  static override flags = {
    out: Flags.string({
      char: 'o',
      description: 'path and name of the pair, without extension (NAME.key and NAME.pub are written)',
      required: true,
      helpValue: 'NAME',
    }),
    json: Flags.boolean({description: 'print {"publicKey", "privateKeyFile", "publicKeyFile"} as JSON'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Keygen)
    const keyFile = `${flags.out}.key`
    const pubFile = `${flags.out}.pub`
    for (const f of [keyFile, pubFile]) {
      if (existsSync(f))
        throw new RunnerError(
          'KEY_EXISTS',
          `${f} already exists; keygen never replaces a key (choose another --out or remove it yourself)`,
          ExitCode.usage,
        )
    }
    const pair = await generateKeyPair()
    try {
      await writeFileAtomic(keyFile, privateKeyPem(pair.secretKey), {mode: 0o600, exclusive: true})
      await writeFileAtomic(pubFile, publicKeyPem(pair.publicKey), {exclusive: true})
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST')
        throw new RunnerError('KEY_EXISTS', `${keyFile} or ${pubFile} appeared while writing; nothing was replaced`, ExitCode.usage)
      throw error
    }
    const publicKey = hex(pair.publicKey)
    if (flags.json) this.log(JSON.stringify({publicKey, privateKeyFile: keyFile, publicKeyFile: pubFile}))
    else this.log(`${publicKey}\nwrote ${keyFile} (private, mode 0600) and ${pubFile}`)
  }
}

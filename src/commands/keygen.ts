import {Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/index.js'
import {createKeyPairFiles} from '../lib/receipt/index.js'

export default class Keygen extends RunnerCommand {
  static override summary = 'Create an Ed25519 key pair for signing receipts.'
  static override description =
    'Writes NAME.key (the private key, PKCS#8 PEM, mode 0600) and NAME.pub (the public key, SPKI PEM), and prints the ' +
    'public key as 64 hex digits, the form receipts record and `runner verify --trust-key` accepts. OpenSSL and ' +
    'node:crypto read both files. Both are written or neither. An existing file is replaced only with --force (the old ' +
    'private key is then lost); a lone half left by an interrupted run is named with how to recover it. ' +
    'Give NAME.key to `runner run --sign-key`; publish NAME.pub.'

  static override examples = [
    {description: 'A key pair named alice (alice.key, alice.pub)', command: '<%= config.bin %> keygen --out alice'},
    {description: 'Replace the pair alice (once both new halves are on disk)', command: '<%= config.bin %> keygen --out alice --force'},
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
    force: Flags.boolean({description: 'replace NAME.key and NAME.pub if they exist (the old private key is lost)'}),
    json: Flags.boolean({description: 'print {"publicKey", "privateKeyFile", "publicKeyFile"} as JSON'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Keygen)
    const files = await createKeyPairFiles(flags.out, {force: flags.force})
    if (flags.json) this.log(JSON.stringify(files))
    else this.log(`${files.publicKey}\nwrote ${files.privateKeyFile} (private, mode 0600) and ${files.publicKeyFile}`)
  }
}

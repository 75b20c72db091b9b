import {Flags} from '@oclif/core'

import {ByteProgress, modelArg, modelFlagOrArg, RunnerCommand} from '../lib/cli/index.js'
import {signModel} from '../lib/signing/index.js'
import {printable} from '../lib/util/index.js'

export default class Sign extends RunnerCommand {
  static override summary = 'Sign a model with your ECDSA key: an OpenSSF Model Signing bundle that --model-sig checks.'
  static override description =
    'Hashes every file of the model (each shard of a split model) and writes a Sigstore bundle v0.3 holding a DSSE ' +
    'envelope over an in-toto statement of the files and their sha256, signed with your ECDSA P-256, P-384 or P-521 ' +
    'private key: the format model_signing writes for `model_signing sign key`, which its verifier reads too. The ' +
    'bundle goes beside the model as <model file>.sig unless -o names another path; an existing one is replaced only ' +
    'with --force. Prints the key fingerprint (sha256 of the public key, DER SubjectPublicKeyInfo). Publish the bundle ' +
    'and your public key; anyone then loads the model with --model-sig BUNDLE --model-pubkey PEM (docs/model-signing.md).'

  static override examples = [
    {
      description: 'Make a P-256 key pair with openssl',
      command: 'openssl ecparam -name prime256v1 -genkey -noout -out key.pem && openssl ec -in key.pem -pubout -out pub.pem',
    },
    {description: 'Sign a model (writes model.gguf.sig)', command: '<%= config.bin %> sign -m model.gguf --key key.pem'},
    {
      description: 'Run it only if the signature holds',
      command: '<%= config.bin %> run -m model.gguf --model-sig model.gguf.sig --model-pubkey pub.pem --require-signed-model -p "Hello"',
    },
    {
      description: 'Check it with model_signing itself',
      command: 'model_signing verify key --signature model.gguf.sig --public_key pub.pem model.gguf',
    },
  ]

  static override flags = {
    ...modelFlagOrArg,
    key: Flags.string({
      description: 'your ECDSA P-256/P-384/P-521 private key (unencrypted PEM, from openssl)',
      required: true,
      helpValue: 'PEM',
    }),
    out: Flags.string({
      char: 'o',
      description: 'where to write the bundle (default: <model file>.sig beside the model)',
      helpValue: 'FILE',
    }),
    force: Flags.boolean({description: 'replace the bundle if it exists'}),
    json: Flags.boolean({description: 'print {"bundle", "keyFingerprint", "curve", "rootDigest", "files"} as JSON'}),
  }

  static override args = modelArg

  async run(): Promise<void> {
    const {flags, args} = await this.parse(Sign)
    const modelPath = await this.modelFromFlagOrArg(flags.model, args.model, 'sign')
    const progress = flags.json ? undefined : new ByteProgress('hashing')
    const r = await signModel({
      modelPath,
      keyPath: flags.key,
      ...(flags.out !== undefined ? {outPath: flags.out} : {}),
      force: flags.force,
      ...(progress ? {onProgress: (done: number, total: number) => progress.update(done, total)} : {}),
    })
    progress?.end()
    if (flags.json) {
      const {bundlePath: bundle, keyFingerprint, curve, rootDigest, files} = r
      this.log(JSON.stringify({bundle, keyFingerprint, curve, rootDigest, files}))
      return
    }
    // Paths are printed escaped: a file name may hold control characters.
    for (const f of r.files) this.log(`${f.sha256}  ${printable(f.path)}`)
    this.log(`wrote ${printable(r.bundlePath)} (${r.curve} key ${r.keyFingerprint})`)
  }
}

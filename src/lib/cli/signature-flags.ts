/**
 * Model signature flags (docs/model-signing.md), on every command that loads a model (run, chat,
 * embed, score, bench, train-lora, verify, quantize, remove-sublayer; serve per model): --model-sig BUNDLE with --model-pubkey
 * PEM checks an OpenSSF Model Signing bundle before the model is mapped; --require-signed-model
 * refuses a model without one (RUNNER_REQUIRE_SIGNED_MODEL=1 sets it for every command).
 */
import {Flags} from '@oclif/core'

import {rm} from 'node:fs/promises'

import {checkMappedFiles, checkSignaturePolicy, type SignaturePolicy, type VerifiedSignature} from '../signing/index.js'

export const signatureFlags = {
  'model-sig': Flags.string({
    description:
      'check the model against this OpenSSF Model Signing bundle (model_signing sign key, or runner sign) before it is loaded; needs --model-pubkey (default: none, the model is not checked)',
    helpValue: 'BUNDLE',
  }),
  'model-pubkey': Flags.string({
    description: "the signer's ECDSA P-256/P-384/P-521 public key (PEM) that --model-sig must verify under (default: none)",
    helpValue: 'PEM',
  }),
  'require-signed-model': Flags.boolean({
    description: 'refuse to load a model without a verified --model-sig signature (exit 3)',
  }),
}

export interface SignatureFlagValues {
  readonly 'model-sig'?: string
  readonly 'model-pubkey'?: string
  readonly 'require-signed-model'?: boolean
}

/** The policy the flags ask for; one of --model-sig / --model-pubkey without the other is a usage error (exit 2). */
export function signaturePolicyFromFlags(flags: SignatureFlagValues): SignaturePolicy {
  const policy: SignaturePolicy = {
    ...(flags['model-sig'] !== undefined ? {bundlePath: flags['model-sig']} : {}),
    ...(flags['model-pubkey'] !== undefined ? {publicKeyPath: flags['model-pubkey']} : {}),
    require: flags['require-signed-model'] === true,
  }
  checkSignaturePolicy(policy)
  return policy
}

/**
 * For commands that read a signed model's file themselves (quantize, remove-sublayer): once it has
 * been read, the input must still be the file that was checked (same device, inode, size, times);
 * if not, what was written from it is removed and the command is refused (exit 3).
 */
export async function keepIfStillSigned(signed: VerifiedSignature, output: string): Promise<void> {
  try {
    await checkMappedFiles(signed.files)
  } catch (error) {
    await rm(output, {force: true})
    throw error
  }
}

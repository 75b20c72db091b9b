/**
 * The constants of the OpenSSF Model Signing (OMS) format as sigstore/model-transparency's
 * model_signing v1.x writes it for key signing (`model_signing sign key`): a Sigstore bundle v0.3
 * whose DSSE envelope carries an in-toto Statement v1 listing the model's files and their sha256.
 */
export const BUNDLE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json'
export const PAYLOAD_TYPE = 'application/vnd.in-toto+json'
export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1'
export const PREDICATE_TYPE = 'https://model_signing/signature/v1.0'
/** The one serialization checked: a digest per whole file ("shards" splits files in pieces). */
export const SERIALIZATION_METHOD = 'files'
export const HASH_TYPE = 'sha256'
/** model_signing's name of the one resource of a model that is a single file (its path relative to itself). */
export const SINGLE_FILE_RESOURCE = '.'

/** The curves model_signing signs with, and the hash each is used with (its get_ec_key_hash). */
export const CURVES = {
  prime256v1: {name: 'P-256', hash: 'sha256'},
  secp384r1: {name: 'P-384', hash: 'sha384'},
  secp521r1: {name: 'P-521', hash: 'sha512'},
} as const

export type CurveName = (typeof CURVES)[keyof typeof CURVES]['name']
export type HashName = (typeof CURVES)[keyof typeof CURVES]['hash']

/** One file of the model as the statement lists it. */
export interface Resource {
  readonly name: string
  readonly algorithm: typeof HASH_TYPE
  /** 64 lowercase hex digits. */
  readonly digest: string
}

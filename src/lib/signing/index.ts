/**
 * Public face of the signing area: OpenSSF Model Signing (OMS) bundles, checked before a model is
 * mapped (verifyModelSignature, then checkMappedFiles once it is) and written for a user's own key
 * (signModel). docs/model-signing.md.
 */
export {isSignatureRefusal, SIGNATURE_REFUSED, SIGNATURE_REQUIRED, SIGNATURE_UNSUPPORTED} from './errors.js'
export {BUNDLE_MEDIA_TYPE, CURVES, type CurveName, PAYLOAD_TYPE, PREDICATE_TYPE, type Resource, STATEMENT_TYPE} from './format.js'
export {preAuthEncoding} from './dsse.js'
export {parseBundle, type ParsedBundle} from './bundle.js'
export {buildStatement, parseStatement, rootDigest, type Statement} from './statement.js'
export {type EcPublicKey, type EcPrivateKey, readPrivateKeyFile, readPublicKeyFile} from './keys.js'
export {checkMappedFiles, type FileIdentity, hashFile, type HashedFile, type HashProgress} from './files.js'
export {
  checkSignaturePolicy,
  matchResources,
  modelSignatureSummary,
  type ModelSignatureSummary,
  type SignaturePolicy,
  verifyBundle,
  type VerifiedFile,
  type VerifiedSignature,
  verifyModelSignature,
} from './verify.js'
export {defaultBundlePath, signModel, type SignOptions, type SignReport} from './sign.js'

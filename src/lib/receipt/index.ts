export {intactChain} from './prev.js'
export {
  CHAIN_MARK,
  RECEIPT_FORMAT,
  RECEIPT_VERSION,
  type ReceiptBody,
  type ReceiptModelSignature,
  type ReceiptSignature,
  SIGNATURE_MARK,
  splitReceipt,
} from './format.js'
export {engineIdentity, packageSha256} from './identity.js'
export {createKeyPairFiles, type KeyPairFiles} from './keygen.js'
export {generateKeyPair, hex, type KeyPair, privateKeyPem, publicKeyPem, readPublicKey, readSecretKey} from './keys.js'
export {
  prepareReceipt,
  PROFILE,
  receiptModelSignature,
  type ReceiptOptions,
  type ReceiptSetup,
  type RunRecord,
  writeReceipt,
} from './record.js'
export {type Check, type Divergence, type Verdict, VERDICT_EXIT, verifyReceipt, type VerifyOptions, type VerifyReport} from './verify.js'

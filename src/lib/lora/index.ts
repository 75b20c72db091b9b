export {type LoraAdapter, type LoraTensorPair, readLoraAdapter} from './adapter.js'
export {bindLoraAdapter, LORA_ROLES, type LoraPairBinding} from './bind.js'
export {type LoraSpec, parseLoraSpec} from './spec.js'
export {type LoraFileContent, type LoraPairData, writeLoraAdapter} from './write.js'

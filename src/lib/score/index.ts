export {type ScoreOptions, type ScoreResult, scoreTokens, type WindowResult} from './score.js'
export {type WindowScheme, windowScheme, windowTokens} from './windows.js'
export {type BaseLogits, type BasePosition, decodeBaseLogits, encodeBaseLogits, readBaseLogits, writeBaseLogits} from './base-logits.js'
export {basePosition, checkBaseMatches, KLD_MARGIN, type KldResult, positionKld, summarizeKld, topK} from './kld.js'

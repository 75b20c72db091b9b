export {type ScoreOptions, type ScoreResult, scoreTokens, type WindowResult} from './score.js'
export {type WindowScheme, windowScheme, windowTokens} from './windows.js'

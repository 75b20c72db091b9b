/** Tool calling: call syntaxes per family, the prompt side, the grammar that makes calls valid, and the answer parser. */
export {AnswerParser, type AnswerOptions, parseAnswer, type ThinkStart} from './answer.js'
export {detectToolFormat, templateThinks, THINK, TOOL_FORMATS, type ToolFormat, type ToolFormatId} from './formats.js'
export {thinkingConstraint, toolConstraint, toolsConstrained, type ToolGrammarOptions} from './grammar.js'
export {rendersTools, templateTools, toolFormatOf, toolPrompt, type ToolPrompt} from './prompt.js'
export {type AnswerEvent, type ParsedAnswer, TOOL_NAME, type ToolCallOut, type ToolChoice, type ToolSpec} from './types.js'

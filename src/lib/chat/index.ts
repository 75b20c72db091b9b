export {
  checkArgumentDepth,
  MAX_ARGUMENT_DEPTH,
  CHAT_ROLES,
  type ChatMessage,
  ChatHistoryError,
  type ChatRole,
  type ChatToolCall,
  type HistoryOptions,
  validateHistory,
} from './messages.js'
export {
  CHAT_TEMPLATE_KEY,
  CHATML_TEMPLATE,
  ChatTemplate,
  type ChatTemplateSource,
  encodeChatPrompt,
  RESERVED_TEMPLATE_VARIABLES,
  type RenderOptions,
} from './template.js'
export {RENDER_BUDGET_DEFAULTS, type RenderBound, type RenderBudget, TemplateBudgetError} from './render-budget.js'
export {BUILTIN_TEMPLATE_NAMES, BUILTIN_TEMPLATES} from './builtin-templates.js'
export {chatTemplateOverride} from './template-choice.js'

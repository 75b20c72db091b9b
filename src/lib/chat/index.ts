export {CHAT_ROLES, type ChatMessage, ChatHistoryError, type ChatRole, validateHistory} from './messages.js'
export {
  CHAT_TEMPLATE_KEY,
  CHATML_TEMPLATE,
  ChatTemplate,
  type ChatTemplateSource,
  encodeChatPrompt,
  type RenderOptions,
} from './template.js'

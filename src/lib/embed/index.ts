/**
 * Public face of the embed area: pooled, normalised embeddings of texts or token lists (the library
 * call behind `runner embed` and POST /v1/embeddings).
 */
export {
  embed,
  type EmbedInput,
  EmbedInputError,
  type EmbedOptions,
  type EmbedResult,
  embeddingTokens,
  embedTokens,
  resolvePooling,
} from './embed.js'
export {embedWithModel, type EmbedFileOptions, formatVectors, readInputLines, shortestFloat32} from './embed-file.js'
export {DEFAULT_POOLING, modelPooling, type ModelPooling, normalize, pool, type Pooling, POOLINGS} from './pooling.js'

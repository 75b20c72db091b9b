/**
 * The one model check: what the loader verifies before the engine sees a file (metadata → config,
 * tensors → roles, tokenizer, vocabulary), shared by every command that reads a model.
 */
export {checkModel, type CheckedModel, loadVerdict, type LoadVerdict, renderVerdict, verdictJson} from './check.js'

/**
 * Public face of the models area: the models folder (RUNNER_MODELS / XDG), Hugging Face Hub
 * references as llama.cpp's -hf takes them, `runner pull` (resumable, verified, atomic), `list`,
 * `rm`, and the resolution of a model name wherever a command takes a model path.
 */
export {hubEndpoint, type HubFile} from './hub-client.js'
export {hasHubPrefix, type HubRef, parseHubRef} from './hub-ref.js'
export {listModels, type ModelListing} from './list.js'
export {type ManifestFile, type ModelManifest} from './manifest.js'
export {modelsDir} from './models-dir.js'
export {chooseFiles, pullInterrupted, pullJson, pullModel, type PullOptions, type PullPlan, type PullResult, pullSummary} from './pull.js'
export {resolveModelPath} from './resolve.js'
export {findStoredModel, listStoredModels, removeStoredModel, type StoredModel} from './store.js'

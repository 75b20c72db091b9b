/** Public face of the HTTP server (`runner serve`). */
export {ApiError} from './api-error.js'
export {type RunningServer, SERVE_DEFAULTS, type ServeOptions, SHUTDOWN_GRACE_MS, startServer} from './server.js'
export {ROUTES} from './routes.js'
export {closeOnSignal, exposureWarning, parseTimeoutFlag, readTemplateFlag, serveFlags, serveOptions, startupLine} from './serve-cli.js'

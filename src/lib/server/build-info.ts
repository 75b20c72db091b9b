/**
 * The build a server runs, as OpenAI's `system_fingerprint` names it ("the backend configuration
 * the model runs with", to tell when a changed backend may change results for the same seed):
 * the runner version and the first 12 hex digits of the two hashes a receipt records and
 * `runner verify` compares to decide "same build" (src/lib/receipt identity.ts): the native addon
 * binary and the JavaScript. llama-server sends its own build ("b<number>-<commit>") there.
 */
import {engineIdentity} from '../receipt/index.js'

export interface BuildInfo {
  readonly runner: string
  readonly addonSha256: string
  readonly packageSha256: string
  /** `runner-<version>-<addon sha256, 12 hex>-<JavaScript sha256, 12 hex>`. */
  readonly systemFingerprint: string
}

let cached: Promise<BuildInfo> | undefined

/** Hashed once per process (the code does not change under a running process). */
export function buildInfo(): Promise<BuildInfo> {
  cached ??= engineIdentity().then((e) => ({
    runner: e.runner,
    addonSha256: e.addonSha256,
    packageSha256: e.packageSha256,
    systemFingerprint: `runner-${e.runner}-${e.addonSha256.slice(0, 12)}-${e.packageSha256.slice(0, 12)}`,
  }))
  return cached
}

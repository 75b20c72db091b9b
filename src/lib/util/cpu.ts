import {readFileSync} from 'node:fs'
import {availableParallelism} from 'node:os'

/**
 * Physical cores of this machine: distinct (physical id, core id) pairs in /proc/cpuinfo, so that
 * hyper-threads are not counted twice (the default thread count, as llama.cpp does). Falls back to
 * the logical count where /proc/cpuinfo says nothing.
 */
export function physicalCores(): number {
  try {
    const text = readFileSync('/proc/cpuinfo', 'utf8')
    const cores = new Set<string>()
    for (const block of text.split(/\n\s*\n/)) {
      const phys = /^physical id\s*:\s*(\d+)/m.exec(block)?.[1]
      const core = /^core id\s*:\s*(\d+)/m.exec(block)?.[1]
      if (phys !== undefined && core !== undefined) cores.add(`${phys}:${core}`)
    }
    if (cores.size > 0) return cores.size
  } catch {
    // not Linux
  }
  return availableParallelism()
}

/** `--threads` default: physical cores, at most 32. */
export function defaultThreads(): number {
  return Math.max(1, Math.min(32, physicalCores()))
}

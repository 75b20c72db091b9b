import {readFileSync} from 'node:fs'
import {cpus} from 'node:os'

/** The CPU's model name (llama-bench's cpu_info): /proc/cpuinfo on Linux, else what Node reports. */
export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    if (m?.[1]) return m[1].trim()
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown'
}

/**
 * llama.cpp's flags that oclif cannot parse as they are written: multi-letter short flags. `-ngl 99`
 * would otherwise read as `-n gl` (n-predict "gl"), a baffling error; it becomes `--n-gpu-layers 99`,
 * which each command honours or refuses by name. Everything after `--` is left alone.
 */
const SPELLINGS: Readonly<Record<string, string>> = {'-ngl': '--n-gpu-layers'}

export function llamaSpellings(argv: readonly string[]): string[] {
  const end = argv.indexOf('--')
  return argv.map((a, i) => {
    if (end >= 0 && i > end) return a
    const [name, value] = a.split(/=(.*)/s)
    const long = SPELLINGS[name!]
    return long === undefined ? a : value === undefined ? long : `${long}=${value}`
  })
}

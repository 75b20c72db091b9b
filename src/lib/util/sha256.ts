import {createHash} from 'node:crypto'
import {createReadStream} from 'node:fs'

/** sha256 of a file, streamed (a multi-GB model is never read whole). */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path, {highWaterMark: 4 << 20})) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

export function sha256Text(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

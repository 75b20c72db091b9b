import {readFile} from 'node:fs/promises'

import {sha256Hex, splitReceipt} from './format.js'
import {checkReceiptStructure} from './schema.js'

/**
 * The chain hash of the receipt at `path` if it is a well-formed receipt whose bytes still match
 * its hash (what a link may point to), or what is wrong with it.
 */
export async function intactChain(path: string): Promise<string | {problem: string}> {
  let file: Buffer
  try {
    file = await readFile(path)
  } catch (error) {
    return {problem: `${path} cannot be read: ${(error as Error).message}`}
  }
  const split = splitReceipt(file)
  if (typeof split === 'string') return {problem: `${path} is not a receipt: ${split}`}
  let parsed: unknown
  try {
    parsed = JSON.parse(file.toString('utf8'))
  } catch (error) {
    return {problem: `${path} is not JSON: ${(error as Error).message}`}
  }
  const structure = checkReceiptStructure(parsed)
  if (typeof structure === 'string') return {problem: `${path} is not a well-formed receipt: ${structure}`}
  if (sha256Hex(split.prefix) !== split.chain) return {problem: `${path} has been altered: its chain hash does not match its bytes`}
  return split.chain
}

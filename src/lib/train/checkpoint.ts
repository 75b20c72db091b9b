/**
 * Training checkpoints (`--checkpoint-every`, Ctrl+C, `--resume`): the settings that define the run,
 * the steps taken and the curve so far (one JSON header), then the parameters and AdamW's two
 * moments as float64, so a resumed run continues bit for bit. Written to a temporary name, fsynced
 * and renamed. A checkpoint is resumed only with the same settings; a difference is refused by name.
 */
import {readFile} from 'node:fs/promises'

import {ExitCode, RunnerError} from '../errors.js'
import {preview, printable, writeFileAtomic} from '../util/index.js'

const MAGIC = 'runner-lora-checkpoint 1\n'

export interface CurvePoint {
  readonly step: number
  readonly loss: number
  readonly lr: number
  readonly gradNorm: number
  readonly tokensPerSecond: number
}

export interface ValidationPoint {
  readonly step: number
  readonly loss: number
  readonly ppl: number
}

export interface CheckpointState {
  /** Everything that decides the adapter's bytes (./train-lora.ts runSettings). */
  readonly settings: Readonly<Record<string, unknown>>
  readonly steps: number
  readonly curve: readonly CurvePoint[]
  readonly validation: readonly ValidationPoint[]
  readonly params: Float64Array
  readonly moment1: Float64Array
  readonly moment2: Float64Array
}

export async function writeCheckpoint(path: string, s: CheckpointState): Promise<void> {
  const header = Buffer.from(
    JSON.stringify({settings: s.settings, steps: s.steps, curve: s.curve, validation: s.validation, nParams: s.params.length}),
    'utf8',
  )
  const len = Buffer.alloc(8)
  len.writeBigUInt64LE(BigInt(header.length))
  const vectors = [s.params, s.moment1, s.moment2].map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength))
  // The vectors start 8-byte aligned, so a reader can view them in place.
  const pad = Buffer.alloc((8 - ((MAGIC.length + 8 + header.length) % 8)) % 8)
  await writeFileAtomic(path, Buffer.concat([Buffer.from(MAGIC, 'latin1'), len, header, pad, ...vectors]))
}

function bad(path: string, detail: string): never {
  throw new RunnerError('TRAIN_BAD_CHECKPOINT', `${printable(path)}: ${detail}`, ExitCode.usage)
}

export async function readCheckpoint(path: string): Promise<CheckpointState> {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    throw new RunnerError(
      'TRAIN_BAD_CHECKPOINT',
      `cannot read the checkpoint ${printable(path)}: ${(error as Error).message}`,
      ExitCode.usage,
    )
  }
  if (bytes.subarray(0, MAGIC.length).toString('latin1') !== MAGIC) bad(path, 'not a runner LoRA checkpoint (bad magic at byte 0)')
  const len = Number(bytes.readBigUInt64LE(MAGIC.length))
  const start = MAGIC.length + 8
  if (len > bytes.length - start) bad(path, `header length ${len} at byte ${MAGIC.length} runs past the file`)
  let header: {settings: Record<string, unknown>; steps: number; curve: CurvePoint[]; validation: ValidationPoint[]; nParams: number}
  try {
    header = JSON.parse(bytes.subarray(start, start + len).toString('utf8'))
  } catch (error) {
    bad(path, `the header at byte ${start} is not JSON: ${(error as Error).message}`)
  }
  const n = header.nParams
  if (!Number.isSafeInteger(n) || n < 1 || !Number.isSafeInteger(header.steps) || header.steps < 0)
    bad(path, `nParams ${preview(n)} or steps ${preview(header.steps)} in the header is not a count`)
  const off = start + len + ((8 - ((start + len) % 8)) % 8)
  if (bytes.length !== off + 3 * 8 * n) bad(path, `${bytes.length} bytes; the header's ${n} parameters need ${off + 24 * n}`)
  const vec = (i: number) =>
    new Float64Array(bytes.buffer.slice(bytes.byteOffset + off + i * 8 * n, bytes.byteOffset + off + (i + 1) * 8 * n))
  return {
    settings: header.settings,
    steps: header.steps,
    curve: header.curve,
    validation: header.validation,
    params: vec(0),
    moment1: vec(1),
    moment2: vec(2),
  }
}

/** The first setting that differs between a checkpoint and this run, named. */
export function checkResumable(path: string, saved: Readonly<Record<string, unknown>>, now: Readonly<Record<string, unknown>>): void {
  for (const key of new Set([...Object.keys(saved), ...Object.keys(now)])) {
    if (JSON.stringify(saved[key]) !== JSON.stringify(now[key]))
      throw new RunnerError(
        'TRAIN_RESUME_MISMATCH',
        `${printable(path)} was made with ${key} = ${printable(JSON.stringify(saved[key]) ?? 'nothing', {max: 200})}, this run has ${printable(JSON.stringify(now[key]) ?? 'nothing', {max: 200})}: resume with the same settings`,
        ExitCode.usage,
      )
  }
}

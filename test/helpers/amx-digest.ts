/**
 * Prints, as one JSON line, the sha256 of every logit a prompt gives and the process's AMX state and
 * tile count, for comparing RUNNER_AMX modes across processes (the engine decides AMX once per
 * process):
 *   node --import tsx test/helpers/amx-digest.ts <model.gguf> <nCtx> <kvType> <nTokens> <seed>
 * The prompt is logits-digest.ts's promptIds.
 */
import {amxStatus} from '../../src/lib/engine/addon.js'
import {logitsDigest} from './logits-digest.js'

const [path, nCtx, kvType, nTokens, seed] = process.argv.slice(2)
const digest = await logitsDigest(path!, Number(nCtx), kvType as 'f16' | 'f32', Number(nTokens), BigInt(seed!))
console.log(JSON.stringify({digest, ...amxStatus()}))

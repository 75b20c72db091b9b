/** Public face of the util area: small helpers with no domain of their own (files, CPUs, numbers, text). */
export {type AtomicFile, type AtomicWriteOptions, writeFileAtomic, writeFilesAtomic} from './atomic-write.js'
export {defaultThreads, physicalCores} from './cpu.js'
export {formatBytes, formatCount, formatRows} from './format.js'
export {bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits} from './half.js'
export {checkFreeSpace, checkOutputPath, interruptedWrite, type OutputPathOptions, WRITE_FAILURES, writeError} from './output-path.js'
export {own} from './own.js'
// Printable text lives in its own area (errors.ts needs it without util); util re-exports it whole.
export * from '../text/index.js'
export {readPrompt} from './prompt-input.js'
export {RecentCache} from './recent.js'
export {deriveSeed, SeededRandom} from './random.js'
export {sha256File, sha256Text} from './sha256.js'
export {parseTempName, removeStaleTempFiles, TempFile, tempPathFor} from './temp-files.js'

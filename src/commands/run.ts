import {
  constraintFromFlags,
  contextFromFlags,
  loadProgress,
  loraFromFlags,
  modelArg,
  RunnerCommand,
  samplingFromFlags,
  speculationFromFlags,
  withInterrupt,
} from '../lib/cli/index.js'
import {amxStatus, cpuFeatures, describeKernels, describeKv, kernelSet} from '../lib/engine/index.js'
import {ExitCode} from '../lib/errors.js'
import {RUN_EXAMPLES, runFlags, runPrompt, type RunReport} from '../lib/run/index.js'
import {describeSpeculation} from '../lib/speculative/index.js'
import {formatBytes, readPrompt, stdoutIsStderr} from '../lib/util/index.js'

export default class Run extends RunnerCommand {
  static override summary = 'Generate text from a prompt with a GGUF model.'
  static override description =
    'Loads the model (memory-mapped, no copy), evaluates the prompt and streams the continuation to stdout as it is ' +
    'generated. A summary (load time, prompt and decode speed, peak memory) goes to stderr. The prompt comes from ' +
    '--prompt, --file or standard input. Ctrl+C stops cleanly and keeps what was generated (exit 130).'

  static override examples = RUN_EXAMPLES

  static override flags = runFlags
  static override args = modelArg
  protected static override strayArgumentHint = 'the prompt goes in -p TEXT (or --file FILE, or standard input)'

  async run(): Promise<void> {
    const {flags, args} = await this.parse(Run)
    const modelPath = await this.modelFromFlagOrArg(flags.model, args.model, 'run', '-p')
    const prompt = await readPrompt(flags.prompt, flags.file)
    const sampling = samplingFromFlags(flags)
    const constraint = await constraintFromFlags(flags)
    const speculation = speculationFromFlags(flags)
    const receipt =
      flags.transcript === undefined
        ? undefined
        : {path: flags.transcript, signKeyPath: flags['sign-key'], prevPath: flags['transcript-prev']}
    const r = await withInterrupt((signal) =>
      runPrompt({
        modelPath,
        prompt,
        nPredict: flags['n-predict'],
        ...contextFromFlags(flags),
        ...(flags['context-shift'] ? {contextShift: {keep: flags.keep ?? 0}} : {}),
        addBos: !flags['no-bos'],
        parseSpecial: flags.special === true,
        sampling,
        constraint,
        ...(speculation ? {speculation} : {}),
        lora: loraFromFlags(flags.lora),
        receipt,
        onProgress: loadProgress(!flags.json),
        onText: flags.json ? undefined : (text) => process.stdout.write(text),
        signal,
      }),
    )
    if (flags.json) {
      const {
        text,
        tokens,
        promptTokens,
        finishReason,
        timings,
        constraint: c,
        peakRssBytes,
        kv,
        contextShift,
        adapters,
        speculation: spec,
      } = r
      const kernels = kernelSet(cpuFeatures(), amxStatus().state)
      this.log(
        JSON.stringify({
          text,
          tokens,
          promptTokens,
          finishReason,
          seed: r.seed.toString(),
          timings,
          constraint: c,
          peakRssBytes,
          kv,
          contextShift,
          kernels,
          adapters,
          ...(spec ? {speculation: spec} : {}),
        }),
      )
    } else {
      if (r.receipt) process.stderr.write(`receipt ${r.receipt.path} (chain ${r.receipt.chain}${r.receipt.signed ? ', signed' : ''})\n`)
      // A newline between the text and the summary when they meet: on a terminal, or in one file (> log 2>&1).
      if ((process.stdout.isTTY || stdoutIsStderr()) && !r.text.endsWith('\n')) process.stdout.write('\n')
      const t = r.timings
      process.stderr.write(
        `load ${t.loadMs} ms · prompt ${r.evaluatedTokens} tokens, ${t.promptTokensPerSecond} tok/s · decode ${r.tokens.length} tokens` +
          `${t.decodeTokensPerSecond === null ? '' : `, ${t.decodeTokensPerSecond} tok/s`}${shifts(r.contextShift)} · peak RSS ${formatBytes(r.peakRssBytes)} · ${r.finishReason} · seed ${r.seed} · ` +
          `kernels ${describeKernels(kernelSet(cpuFeatures(), amxStatus().state))} · ${describeKv(r.kv)}${describeSpeculation(r.speculation)}\n`,
      )
    }
    if (r.finishReason === 'aborted') this.exit(ExitCode.interrupted)
  }
}

/** " (2 context shifts, 244 tokens dropped)" with --context-shift, else nothing. */
function shifts(s: RunReport['contextShift']): string {
  return s ? ` (${s.shifts} context shift${s.shifts === 1 ? '' : 's'}, ${s.discarded} tokens dropped)` : ''
}

import {
  constraintFromFlags,
  contextFromFlags,
  loadProgress,
  loraFromFlags,
  modelArg,
  RunnerCommand,
  samplingFromFlags,
  signaturePolicyFromFlags,
  speculationFromFlags,
  withInterrupt,
} from '../lib/cli/index.js'
import {ExitCode} from '../lib/errors.js'
import {RUN_EXAMPLES, runFlags, runJson, runPrompt, runSummary} from '../lib/run/index.js'
import {readPrompt, stdoutIsStderr} from '../lib/util/index.js'

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
    const signature = signaturePolicyFromFlags(flags)
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
        signature,
        receipt,
        onProgress: loadProgress(!flags.json),
        onText: flags.json ? undefined : (text) => process.stdout.write(text),
        signal,
      }),
    )
    if (flags.json) {
      this.log(JSON.stringify(runJson(r)))
    } else {
      if (r.signature) process.stderr.write(`model signature verified: ${r.signature.curve} key ${r.signature.keyFingerprint}\n`)
      if (r.receipt) process.stderr.write(`receipt ${r.receipt.path} (chain ${r.receipt.chain}${r.receipt.signed ? ', signed' : ''})\n`)
      // A newline between the text and the summary when they meet: on a terminal, or in one file (> log 2>&1).
      if ((process.stdout.isTTY || stdoutIsStderr()) && !r.text.endsWith('\n')) process.stdout.write('\n')
      process.stderr.write(runSummary(r))
    }
    if (r.finishReason === 'aborted') this.exit(ExitCode.interrupted)
  }
}

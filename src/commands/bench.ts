import {loadProgress, modelArg, refuseGpuLayers, RunnerCommand, withInterrupt} from '../lib/cli/index.js'
import {BENCH_EXAMPLES, benchFlags, benchOptionsFromFlags, runBenchCli} from '../lib/bench/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'

export default class Bench extends RunnerCommand {
  static override summary = "Measure this engine's prompt processing and generation speed, as llama-bench does."
  static override description =
    'Times pp (a prompt of -p tokens), tg (-n generated tokens) and --pg (both together) for every combination of the ' +
    'comma lists given (-p, -n, -d, -b, -t, --kv-type), -r times each after a warm-up, and prints the mean and standard ' +
    "deviation of tokens per second in llama-bench's formats and field names (-o md|csv|json|jsonl). Tokens are random " +
    'ids, as llama-bench uses; each test gets a context of exactly its depth + prompt + generation. Results go to ' +
    'stdout, progress to stderr. Compared with llama.cpp side by side: `npm run bench` (docs/benchmarks.md).'

  static override examples = BENCH_EXAMPLES
  static override flags = benchFlags
  static override args = modelArg

  async run(): Promise<void> {
    const {flags, args} = await this.parse(Bench)
    const modelPath = await this.modelFromFlagOrArg(flags.model, args.model, 'bench')
    refuseGpuLayers(flags['n-gpu-layers'])
    const options = benchOptionsFromFlags(flags, this.argv)
    try {
      await withInterrupt((signal) =>
        runBenchCli(modelPath, options, {stdout: process.stdout, stderr: process.stderr}, {signal, onLoadProgress: loadProgress()}),
      )
    } catch (error) {
      // Ctrl+C: the results so far are printed (the writer closed its document); exit as run does.
      if (error instanceof RunnerError && error.exitCode === ExitCode.interrupted) {
        process.stderr.write('runner bench: interrupted\n')
        this.exit(ExitCode.interrupted)
      }
      throw error
    }
  }
}

import {Args, Flags} from '@oclif/core'

import {ByteProgress, listenForInterrupt, RunnerCommand} from '../lib/cli/index.js'
import {hubEndpoint, modelsDir, pullInterrupted, pullJson, pullModel, type PullPlan, pullSummary} from '../lib/models/index.js'
import {printable, printableJson} from '../lib/util/index.js'

export default class Pull extends RunnerCommand {
  static override summary = 'Download a model from the Hugging Face Hub into the models folder.'
  static override description =
    "Takes a model as llama.cpp's -hf takes one: OWNER/REPO[:QUANT] (the file tagged QUANT; without it Q4_K_M, else Q8_0, " +
    'else the first GGUF model file) or OWNER/REPO/PATH/FILE.gguf, each also written hf.co/... or as a huggingface.co ' +
    "address. Every shard of a split model is fetched. Each file is resolved at the main branch's commit, downloaded " +
    'to FILE.download (an interrupted pull resumes there with an HTTP range), checked against the sha256 the Hub lists ' +
    'for it, and only then renamed into place; the model exists for -m, list and rm once all of it is there. The ' +
    "models folder is $RUNNER_MODELS, else $XDG_DATA_HOME/runner/models (~/.local/share/runner/models). The Hub's " +
    'address comes from HF_ENDPOINT, a token for gated or private models from HF_TOKEN.'

  static override examples = [
    {
      description: 'The Q4_K_M file of a repository, then run it by name',
      command: '<%= config.bin %> pull ggml-org/SmolLM3-3B-GGUF:Q4_K_M\n<%= config.bin %> run ggml-org/SmolLM3-3B-GGUF:Q4_K_M -p "Hello"',
    },
    {
      description: 'One file by its path',
      command: '<%= config.bin %> pull bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q8_0.gguf',
    },
    {
      description: 'From a mirror, with a token',
      command: 'HF_ENDPOINT=https://hf-mirror.example HF_TOKEN=hf_... <%= config.bin %> pull OWNER/REPO:Q8_0',
    },
  ]

  static override args = {
    model: Args.string({description: 'OWNER/REPO[:QUANT] or OWNER/REPO/FILE.gguf (hf.co/ prefix optional)', required: true}),
  }

  static override flags = {
    json: Flags.boolean({description: 'print the result as JSON on stdout (name, path, files with sha256, bytes) and no progress'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Pull)
    let plan: PullPlan | undefined
    let progress: ByteProgress | undefined
    let done = 0
    const interrupt = listenForInterrupt()
    try {
      const r = await pullModel(args.model, {
        dir: modelsDir(),
        endpoint: hubEndpoint(),
        token: process.env.HF_TOKEN?.trim() || undefined,
        signal: interrupt.signal,
        onPlan: (p) => {
          plan = p
          if (!flags.json) progress = new ByteProgress(`pulling ${printable(p.name)}`, {firstUpdateIsResumed: true})
        },
        onBytes: (d, total) => {
          done = d
          progress?.update(d, total)
        },
      })
      progress?.end()
      if (flags.json) this.log(printableJson(pullJson(r)))
      else process.stderr.write(`${pullSummary(r)}\n`)
    } catch (error) {
      progress?.end()
      // fetch rejects with the signal's reason (the signal's name), not an Error.
      throw interrupt.signal.aborted ? pullInterrupted(done, plan) : error
    } finally {
      interrupt.dispose()
    }
  }
}

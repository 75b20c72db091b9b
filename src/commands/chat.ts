import {chatFlags, runChat} from '../lib/chat-ui/index.js'
import {
  constraintFromFlags,
  contextFromFlags,
  loraFromFlags,
  modelArg,
  RunnerCommand,
  samplingFromFlags,
  signaturePolicyFromFlags,
  speculationFromFlags,
} from '../lib/cli/index.js'
import {ExitCode} from '../lib/errors.js'

export default class Chat extends RunnerCommand {
  static override summary = 'Chat with a GGUF model in the terminal.'
  static override description =
    'An interactive chat (Ink): the conversation above, an input line below, replies streamed as they are generated, and a ' +
    "status line with the model, context use, cached tokens and the last turn's prompt and decode speed. Each turn " +
    "renders the whole history through the model's chat template (ChatML when it has none) and evaluates only what is " +
    'new: the earlier turns come from the KV cache. Enter sends; Shift+Enter, Alt+Enter or a trailing backslash adds a ' +
    'line; Up/Down recall earlier inputs; Esc or Ctrl+C stops a reply; Ctrl+C twice or Ctrl+D exits; /help lists the ' +
    'slash commands (/reset, /system, /save, /load, /params, /exit). A reply cut by -n is marked [cut: -n N reached]; ' +
    'NO_COLOR (set and not empty) turns colour off.\n\n' +
    'When standard input or output is not a terminal (or with --json), it reads one message per line and writes one ' +
    'answer per line; a newline inside a message or an answer is written \\n and a backslash \\\\ (docs/chat.md).'

  static override examples = [
    {description: 'Chat (greedy, short replies)', command: '<%= config.bin %> chat -m ../shared/models/stories260K.gguf --temp 0 -n 48'},
    {
      description: 'Replies drafted by a small model of the same vocabulary (the same replies, maybe faster)',
      command: '<%= config.bin %> chat big.gguf --draft small.gguf',
    },
    {
      description: "A pulled model by name, with llama.cpp's built-in gemma template",
      command: '<%= config.bin %> chat gemma-3-1b-it-GGUF --chat-template gemma',
    },
    {
      description: 'With a system prompt, dropping the oldest turns when the context is full',
      command: '<%= config.bin %> chat -m model.gguf --system "You are terse." --context-shift',
    },
    {
      description: 'Every reply one JSON object (or --json-schema FILE, --grammar FILE.gbnf)',
      command: '<%= config.bin %> chat -m model.gguf --json-object',
    },
    {
      description: 'Scripted: one message per line in, one answer per line out',
      command: 'printf "Hi\\nTell me a story\\n" | <%= config.bin %> chat -m model.gguf --temp 0 -n 32',
    },
    {
      description: 'One JSON document per answer (token ids, cached tokens, timings)',
      command: 'echo "Hi" | <%= config.bin %> chat -m model.gguf --json',
    },
    {
      description: 'Chat only with a model whose signature verifies (runner sign writes model.gguf.sig)',
      command: '<%= config.bin %> chat -m model.gguf --model-sig model.gguf.sig --model-pubkey signer.pub.pem',
    },
  ]

  static override args = modelArg

  static override flags = chatFlags

  async run(): Promise<void> {
    const {flags, args} = await this.parse(Chat)
    const code = await runChat({
      modelPath: await this.modelFromFlagOrArg(flags.model, args.model, 'chat'),
      system: flags.system,
      nPredict: flags['n-predict'],
      ...contextFromFlags(flags),
      contextShift: flags['context-shift'],
      chatTemplate: flags['chat-template'],
      json: flags.json,
      sampling: samplingFromFlags(flags),
      constraint: await constraintFromFlags(flags),
      lora: loraFromFlags(flags.lora),
      speculation: speculationFromFlags(flags),
      signature: signaturePolicyFromFlags(flags),
    })
    if (code !== ExitCode.ok) this.exit(code)
  }
}

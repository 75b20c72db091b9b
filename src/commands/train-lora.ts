import {RunnerCommand, withInterrupt} from '../lib/cli/index.js'
import {formatTrainSummary, trainFlags, trainLora, trainOptions, trainProgress} from '../lib/train/index.js'

export default class TrainLora extends RunnerCommand {
  static override summary = "Train a LoRA adapter on the CPU, written in llama.cpp's GGUF LoRA format."
  static override description =
    'The base is frozen and read in place in whatever type it has (gradients flow through its dequantized weights). Pairs ' +
    "on --targets are initialised as PEFT does and trained with AdamW (torch's update), a warm-up and a cosine or linear " +
    'schedule, gradient accumulation and clipping. Plain text is cut into packed windows of --ctx tokens; chat JSONL is ' +
    "rendered with the model's chat template and only the assistant turns are scored. The same command gives the same " +
    'adapter bytes for any --threads; Ctrl+C saves a checkpoint that --resume continues bit for bit (exit 130). ' +
    'llama.cpp, ollama and `runner run --lora` load the result. See docs/lora.md.'

  static override examples = [
    {
      description: 'A rank-8 adapter on the attention of stories260K, one pass over a text file',
      command: '<%= config.bin %> train-lora -m ../shared/models/stories260K.gguf --data style.txt --out style.gguf',
    },
    {
      description: 'Chat data, every projection, 200 steps of 4 samples, validation every 20',
      command:
        '<%= config.bin %> train-lora -m model.gguf --data chats.jsonl --val val.jsonl --targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj --steps 200 --grad-accum 4 --eval-every 20 --out chat.gguf',
    },
    {
      description: 'Continue an interrupted run',
      command: '<%= config.bin %> train-lora -m model.gguf --data style.txt --out style.gguf --resume style.ckpt',
    },
    {description: 'Use it', command: '<%= config.bin %> run model.gguf --lora style.gguf -p "Once upon a time"'},
    {
      description: 'Train on a base model whose signature verifies',
      command:
        '<%= config.bin %> train-lora -m base.gguf --model-sig base.gguf.sig --model-pubkey signer.pub.pem --data style.txt --out style.gguf',
    },
  ]

  static override flags = trainFlags

  async run(): Promise<void> {
    const {flags} = await this.parse(TrainLora)
    const result = await withInterrupt((signal) => trainLora({...trainOptions(flags, signal), onStep: trainProgress(!flags.json)}))
    if (flags.json) this.log(JSON.stringify(result))
    else process.stderr.write(`${formatTrainSummary(result)}\n`)
  }
}

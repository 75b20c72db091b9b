/** `runner bench --help`'s examples (a table, so the command stays a thin parse-call-render). */
export const BENCH_EXAMPLES = [
  {description: "llama-bench's default: pp512 and tg128, 5 runs each, a markdown table", command: '<%= config.bin %> bench -m model.gguf'},
  {
    description: 'Prompt lengths and thread counts: the cross product, in llama-bench order',
    command: '<%= config.bin %> bench model.gguf -p 512,1024 -n 128 -t 1,2',
  },
  {
    description: 'At depths: the cache holds 0 and then 4096 tokens before each test',
    command: '<%= config.bin %> bench model.gguf -d 0,4096',
  },
  {
    description: "Prompt and generation timed together (llama-bench's -pg 512,128)",
    command: '<%= config.bin %> bench model.gguf --pg 512,128',
  },
  {
    description: 'Generation only, as CSV (llama-bench -o csv columns)',
    command: '<%= config.bin %> bench model.gguf -p 0 -n 128,256 -o csv',
  },
  {
    description: 'JSON with every run (samples_ns, samples_ts); --json is the same',
    command: '<%= config.bin %> bench model.gguf -r 3 -o json',
  },
  {
    description: 'Benchmark a model whose signature verifies (the hash is not timed)',
    command: '<%= config.bin %> bench -m model.gguf --model-sig model.gguf.sig --model-pubkey signer.pub.pem',
  },
]

/** `runner run --help`'s examples (a table, so the command stays a thin parse-call-render). */
export const RUN_EXAMPLES = [
  {
    description: 'Greedy continuation, the same llama.cpp prints',
    command: '<%= config.bin %> run -m ../shared/models/stories260K.gguf -p "Once upon a time" -n 64 --temp 0',
  },
  {description: 'The model as the argument (as ollama run takes it)', command: '<%= config.bin %> run model.gguf -p "Once upon a time"'},
  {
    description: 'Sampled, reproducible with a seed',
    command: '<%= config.bin %> run -m model.gguf -p "Write a haiku" --temp 0.7 --top-p 0.9 --seed 42',
  },
  {
    description: 'Prompt from a file, result as JSON for scripts',
    command: '<%= config.bin %> run -m model.gguf --file prompt.txt -n 128 --json',
  },
  {
    description: 'Output constrained to a JSON Schema (or --grammar FILE.gbnf, or --json-object)',
    command: '<%= config.bin %> run -m model.gguf -p "A person as JSON:" --json-schema person.schema.json',
  },
  {
    description: 'With a LoRA adapter at half strength (llama.cpp --lora-scaled)',
    command: '<%= config.bin %> run model.gguf --lora style.gguf:0.5 -p "Once upon a time"',
  },
  {
    description: 'Four times the context of a model trained on 4096 tokens, with YaRN rope scaling (docs/long-context.md)',
    command: '<%= config.bin %> run model.gguf --rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 4096 -c 16384 -f long.txt',
  },
  {
    description: 'Speculative decoding by prompt lookup or with a small draft model: the same output, maybe faster (docs/speculative.md)',
    command: '<%= config.bin %> run model.gguf -f edit-this-file.txt --draft-lookup',
  },
  {
    description: 'A draft model of the same vocabulary, and fail if it cannot be used',
    command: '<%= config.bin %> run big.gguf -p "Once upon a time" --draft small.gguf --draft-max 8 --draft-required',
  },
  {
    description: 'Generate past a full context: keep the whole prompt, drop half of what follows it (docs/long-context.md)',
    command: '<%= config.bin %> run model.gguf -f long.txt -n 8192 --context-shift --keep -1',
  },
  {description: 'Prompt from standard input', command: 'echo "Once upon a time" | <%= config.bin %> run -m model.gguf -n 32'},
  {
    description: 'A signed receipt anyone with the model can replay (runner verify)',
    command: '<%= config.bin %> run -m model.gguf -p "Hello" --seed 7 --transcript r.json --sign-key alice.key',
  },
  {
    description: 'Only a model whose OpenSSF Model Signing bundle verifies under your key (docs/model-signing.md)',
    command: '<%= config.bin %> run -m model.gguf --model-sig model.gguf.sig --model-pubkey signer.pub.pem -p "Hi"',
  },
]

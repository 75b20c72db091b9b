/** `runner quantize --help`'s examples (a table, so the command stays a thin parse-call-render). */
export const QUANTIZE_EXAMPLES = [
  {
    description: "llama.cpp's Q4_K_M mix (Q4_K, with Q6_K where its rules put more bits)",
    command: '<%= config.bin %> quantize model-f16.gguf model-q4_k_m.gguf --type Q4_K_M',
  },
  {description: 'Q8_0 for every weight matrix', command: '<%= config.bin %> quantize model-f16.gguf model-q8_0.gguf --type Q8_0 --pure'},
  {
    description: 'Replace an output file that exists (without --force it is refused before any work)',
    command: '<%= config.bin %> quantize model-f16.gguf model-q8_0.gguf --type Q8_0 --pure --force',
  },
  {
    description: 'Q4_0 but keep the output projection as it is',
    command: '<%= config.bin %> quantize model-f16.gguf model-q4_0.gguf --type Q4_0 --pure --keep-output',
  },
  {
    description: 'Per-tensor rules from a plan file',
    command: '<%= config.bin %> quantize in.gguf out.gguf --type Q4_0 --pure --type-plan plan.json',
  },
  {
    description: 'Merge a LoRA adapter (in F32), then quantize',
    command: '<%= config.bin %> quantize model-f16.gguf merged-q8_0.gguf --type Q8_0 --pure --merge-lora style.gguf',
  },
  {
    description: 'Merge two adapters, the second at half strength, keeping full precision',
    command: '<%= config.bin %> quantize model-f32.gguf merged-f32.gguf --type F32 --merge-lora a.gguf --merge-lora b.gguf:0.5',
  },
  {
    description: 'Quantize and remove the attention of block 2 in one pass',
    command: '<%= config.bin %> quantize in.gguf out.gguf --type Q8_0 --pure --remove-sublayer attn:2',
  },
  {
    description: 'Quantize only an input whose signature verifies (the output is removed if the input changes meanwhile)',
    command:
      '<%= config.bin %> quantize model-f16.gguf model-q8.gguf --type Q8_0 --model-sig model-f16.gguf.sig --model-pubkey signer.pub.pem',
  },
]

// Test texts for the tokenizer comparisons: a few KB of mixed English prose, code, numbers, unicode
// and whitespace runs, plus a deterministic generator of short random strings built from the
// characters tokenizers disagree about.

/** Samples of every kind; each is compared on its own and all of them joined. */
export const MIXED_SAMPLES: readonly string[] = [
  // English prose, contractions in both cases, punctuation.
  `Once upon a time, in a quiet village by the sea, there lived an old clockmaker named Elias. Every morning he opened his shop at seven o'clock sharp, brewed a pot of strong black tea, and sat down at his bench. "Time," he liked to say, "is the only thing we can't make more of." The children didn't believe him; they thought he'd hidden a secret drawer full of extra hours. I'M SURE HE'S RIGHT, THEY'LL SAY ONE DAY. We've all wondered, haven't we? It's true: you're never too old to learn, and I'd argue we'll never stop.`,
  // Python with indentation, tabs, trailing spaces and blank-line runs.
  `import math\n\n\ndef fibonacci(n: int) -> int:\n    """Return the n-th Fibonacci number."""\n    if n <= 1:\n        return n\n    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b   \n    return b\n\n\nclass Point:\n\tdef __init__(self, x, y):\n\t\tself.x = x\n\t\tself.y = y\n\n\tdef norm(self):\n\t\treturn math.sqrt(self.x ** 2 + self.y ** 2)  # Euclidean\n`,
  // JavaScript / JSON / shell, operators and brackets.
  `const config = {\n  "name": "runner",\n  "version": "0.1.0",\n  "scripts": { "test": "node --test" },\n};\nfunction add(a, b) { return a + b; } // => 3\nlet x = arr.map((v, i) => v * i).filter(Boolean) ?? [];\nif (x !== null && x.length >= 10) { console.log(\`\${x.length} items\`); }\n$ grep -rn 'TODO' src/ | wc -l && echo "done" || exit 1\n<div class="card">&nbsp;<b>bold</b></div>\n`,
  // Numbers of every shape.
  `Numbers: 0 7 42 365 1234 12345 1234567 9876543210 3.14159 2.718281828 -0.5 +17 1e10 6.022e23 0x1F 0b1010 1,000,000 50% $19.99 €5 ¥100 ½ ² ³ Ⅻ ٣٤٥ ১২৩ 2024-06-01T12:30:45Z 192.168.0.1 v1.2.3 #42 +1 (555) 123-4567`,
  // Unicode: CJK, Japanese, Korean, emoji with modifiers and ZWJ sequences, accents, RTL, combining marks.
  `日本語のテキストと中文字符，还有한국어 텍스트。東京は晴れです！\nEmoji: 🙂 👍🏽 🇫🇷 👨‍👩‍👧‍👦 🦙🦙 ✅ ❤️ 🚀\nAccents: café naïve résumé façade Ångström Škoda Łódź Øre Þór\nGreek: Ωμέγα αβγ. Cyrillic: русский язык, Български. Thai: ภาษาไทย. Hindi: हिन्दी. Tamil: தமிழ்.\nRTL: العربية لغة جميلة — עברית היא שפה.\nCombining marks: e\u0301 a\u0308 o\u0302\u0323 n\u0303 x\u0303\u0304 Z\u0351\u0352\u0353 q\u0307\u0323`,
  // Whitespace runs: spaces, tabs, newline runs, carriage returns, trailing spaces, no-break spaces.
  `a  b   c    d\t\te\t \tf\n\ng\n\n\nh\r\ni\r\n\r\nj \n k  \n\n  l\u00a0m\u3000n\u2009o   \n\n\n\n    indented\n\t\ttabbed\n   trailing spaces   `,
  // Markdown with a table and a list.
  `# Release notes\n\n## v2.0 (2024-03-15)\n\n- **Breaking:** the \`--json\` flag now prints one object per line.\n- Fixed a crash when the input file was empty (#1234).\n  * Nested item with trailing spaces  \n\n| Model | Params | Speed (tok/s) |\n|-------|-------:|--------------:|\n| tiny  |   15M  |        1,234.5 |\n| small |  125M  |          456.7 |\n\n> Note: results vary by CPU. See https://example.com/docs?page=2&sort=desc#results for details.\n`,
  // More prose: dialogue, hyphenation, ellipses and dashes.
  `"Where are you going?" asked the fox. "Nowhere in particular," replied the owl — who, to be fair, rarely went anywhere at all. It was a well-known, long-standing, half-forgotten arrangement... The fox shrugged; the owl blinked twice. Then, without another word, they walked (well, one walked and one flew) toward the old mill, whose wheel hadn't turned since nineteen-eighty-four. Mr. O'Brien's dog, a three-legged terrier called Max, followed them at a respectful distance.`,
  // Punctuation runs and odd symbols.
  `Wow!!! Really?! (yes) [no] {maybe} "quoted" 'single' a-b_c/d\\e #1 @home 50% & more... ------======= '''''' \`\`\`\`\`\` """" ...... !!!!!! ?????? ~~~ ^^^ ||| <<< >>> «guillemets» „Anführung“ ¿Qué? ¡Hola!`,
]

/** Texts that llama.cpp's clean_up_tokenization_spaces rewrites on decode (BPE vocabularies with clean_spaces). */
export const CLEANUP_SAMPLES: readonly string[] = [
  "Hello , world ! Is it ? Yes . It ' s here , isn 't it ? They 're , we 've , I 'm , you 'll , he 'd",
  "a ' ' b ' c '' d 'll 're 've 's 'm 'd 't",
  " . , ! ? ' ",
  "x ' s ' t",
]

/** All samples joined: a bit over 3 KB. */
export const MIXED_TEXT = MIXED_SAMPLES.join('\n\n')

/** xorshift32: deterministic, so a failing case is reproducible from its index. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s / 0x1_0000_0000
  }
}

const POOL: readonly string[] = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ',
  ...'0123456789',
  ...'.,;:!?\'"()[]{}<>-_=+*/\\|@#$%^&~`',
  ' ',
  ' ',
  ' ',
  '  ',
  '\t',
  '\n',
  '\n\n',
  '\r\n',
  "'s",
  "'T",
  "'re",
  "'VE",
  "'ll",
  "'d",
  "'M",
  'the',
  ' the',
  'ing',
  'é',
  'ñ',
  'ü',
  'ß',
  'Ω',
  'я',
  'ж',
  '日',
  '本',
  '語',
  '中',
  '한',
  'ا',
  'ע',
  'ไ',
  'ह',
  '\u0301',
  '\u0308',
  '🙂',
  '👍🏽',
  '👨‍👩‍👧',
  '🦙',
  '½',
  '²',
  '٣',
  '\u00a0',
  '\u3000',
  '\u2009',
  '\u200b',
  '€',
  '™',
  // Special-token spellings of the three vocabularies (plain text unless parseSpecial).
  '<s>',
  '</s>',
  '<unk>',
  '<|im_start|>',
  '<|im_end|>',
  '<|endoftext|>',
  '<|begin_of_text|>',
  '<|eot_id|>',
  '<think>',
  '</think>',
]

/** Extra characters where JS `\s` and llama.cpp's White_Space disagree (only for comparisons with llama.cpp). */
export const LLAMA_CPP_ONLY_POOL: readonly string[] = ['\u0085', '\ufeff', '\u2028']

/** `count` random strings of 1..maxLen pieces drawn from the pool, plus `extra`, minus `exclude`. */
export function randomTexts(
  seed: number,
  count: number,
  maxLen: number,
  {extra = [], exclude = []}: {extra?: readonly string[]; exclude?: readonly string[]} = {},
): string[] {
  const next = rng(seed)
  const pool = [...POOL, ...extra].filter((p) => !exclude.includes(p))
  return Array.from({length: count}, () => {
    const n = 1 + Math.floor(next() * maxLen)
    let s = ''
    for (let i = 0; i < n; i++) s += pool[Math.floor(next() * pool.length)]!
    return s
  })
}

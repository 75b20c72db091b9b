// ESLint (flat config), run by `npm run lint` and CI (.ci/run). typescript-eslint's recommended
// rules without type information, so the whole tree lints in seconds on two cores; tsc (npm test)
// is the type checker. Prettier owns the layout (.prettierrc, printWidth 140); max-len only catches
// what it cannot wrap, and leaves long strings whole so that grep finds a message.
import js from '@eslint/js'
import {defineConfig, globalIgnores} from 'eslint/config'
import tseslint from 'typescript-eslint'

import runner from './scripts/lint/area-boundaries.js'

/** The Node.js globals the plain JavaScript files use (tsc checks the TypeScript's). */
const NODE_GLOBALS = Object.fromEntries(
  ['console', 'process', 'Buffer', 'URL', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'].map((g) => [g, 'readonly']),
)

export default defineConfig([
  globalIgnores([
    'dist/',
    'native/',
    'node_modules/',
    '.venv-reference/',
    'src/lib/arch/config-fields.generated.ts',
    'src/lib/native-status.generated.ts',
  ]),
  {
    files: ['{src,scripts,test,bin}/**/*.{ts,tsx,js,mjs}', '*.js'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    languageOptions: {globals: NODE_GLOBALS},
    plugins: {runner},
    rules: {
      'max-len': ['error', {code: 160, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true}],
      // `_name` marks a parameter or binding kept on purpose (a callback's position, a rest sibling).
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true}],
      'runner/area-boundaries': [
        'error',
        {
          allow: [
            {
              from: 'scripts/',
              target: 'src/lib/engine/test-addon.ts',
              why: 'the test addon is a test harness the product never loads: kept out of the engine index, open to scripts/bench-kernels.ts as to tests',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests test an area's internals: they import its inner files on purpose.
    files: ['test/**'],
    rules: {'runner/area-boundaries': 'off'},
  },
])

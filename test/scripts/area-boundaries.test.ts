/**
 * scripts/lint/area-boundaries.js, the local ESLint rule: outside an area of src/lib, only its
 * index.ts may be imported, by every form of import; the allow list opens exactly what it names.
 */
import {join, resolve} from 'node:path'
import {after, describe, it} from 'node:test'
import {fileURLToPath} from 'node:url'

import {RuleTester} from 'eslint'
import tseslint from 'typescript-eslint'

import runner from '../../scripts/lint/area-boundaries.js'

RuleTester.describe = describe
RuleTester.it = it
RuleTester.itOnly = it.only
RuleTester.afterAll = after

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..')
const at = (path: string) => join(ROOT, ...path.split('/'))
const tester = new RuleTester({languageOptions: {parser: tseslint.parser, ecmaVersion: 2022, sourceType: 'module'}})
const rule = runner.rules['area-boundaries']
const internal = (spec: string, area: string, inner: string) => ({messageId: 'internal', data: {spec, area, inner}})
const ALLOW = [{allow: [{from: 'scripts/', target: 'src/lib/engine/test-addon.ts', why: 'a test harness'}]}]

tester.run('area-boundaries', rule, {
  valid: [
    // Another area's index, from an area, from a command and from a script.
    {filename: at('src/lib/score/score.ts'), code: "import {Model} from '../engine/index.js'"},
    {filename: at('src/commands/run.ts'), code: "import {RunnerCommand} from '../lib/cli/index.js'"},
    {filename: at('scripts/bench.ts'), code: "import {defaultThreads} from '../src/lib/util/index.js'"},
    // An area's own files, and files directly in src/lib (no area).
    {filename: at('src/lib/engine/model.ts'), code: "import {engineError} from './errors.js'"},
    {filename: at('src/lib/engine/model.ts'), code: "import {ExitCode} from '../errors.js'"},
    {filename: at('src/commands/run.ts'), code: "import {ExitCode} from '../lib/errors.js'"},
    // Packages and node: builtins are not relative.
    {filename: at('src/commands/run.ts'), code: "import {Flags} from '@oclif/core'"},
    // A dynamic import whose specifier is computed cannot be checked statically.
    {filename: at('src/commands/run.ts'), code: 'const m = await import(name)'},
    // The allow list: exactly the importer prefix and the target it names.
    {filename: at('scripts/bench-kernels.ts'), code: "import {benchVecDot} from '../src/lib/engine/test-addon.js'", options: ALLOW},
  ],
  invalid: [
    {
      filename: at('src/commands/run.ts'),
      code: "import {loadProgress} from '../lib/cli/progress.js'",
      errors: [internal('../lib/cli/progress.js', 'cli', 'progress.js')],
    },
    {
      filename: at('src/lib/cli/runner-command.ts'),
      code: "import type {GgufError} from '../gguf/errors.js'",
      errors: [internal('../gguf/errors.js', 'gguf', 'errors.js')],
    },
    {
      filename: at('src/lib/server/x.ts'),
      code: "export {formatBytes} from '../util/format.js'",
      errors: [internal('../util/format.js', 'util', 'format.js')],
    },
    {
      filename: at('src/lib/server/x.ts'),
      code: "export * from '../util/format.js'",
      errors: [internal('../util/format.js', 'util', 'format.js')],
    },
    {
      filename: at('src/lib/server/x.ts'),
      code: "const m = await import('../engine/model.js')",
      errors: [internal('../engine/model.js', 'engine', 'model.js')],
    },
    {
      filename: at('src/lib/server/x.ts'),
      code: 'const m = await import(`../engine/model.js`)',
      errors: [internal('../engine/model.js', 'engine', 'model.js')],
    },
    {
      filename: at('src/lib/server/x.ts'),
      code: "let m: import('../engine/model.js').Model",
      errors: [internal('../engine/model.js', 'engine', 'model.js')],
    },
    {
      filename: at('scripts/bench.ts'),
      code: "import {SeededRandom} from '../src/lib/util/random.js'",
      errors: [internal('../src/lib/util/random.js', 'util', 'random.js')],
    },
    // An index deeper in the area is not the area's index.
    {
      filename: at('src/commands/run.ts'),
      code: "import {x} from '../lib/engine/sub/index.js'",
      errors: [internal('../lib/engine/sub/index.js', 'engine', 'sub/index.js')],
    },
    // Without the allow list, or from outside its prefix, the test addon is an internal file too.
    {
      filename: at('scripts/bench-kernels.ts'),
      code: "import {benchVecDot} from '../src/lib/engine/test-addon.js'",
      errors: [internal('../src/lib/engine/test-addon.js', 'engine', 'test-addon.js')],
    },
    {
      filename: at('src/commands/run.ts'),
      code: "import {benchVecDot} from '../lib/engine/test-addon.js'",
      options: ALLOW,
      errors: [internal('../lib/engine/test-addon.js', 'engine', 'test-addon.js')],
    },
  ],
})

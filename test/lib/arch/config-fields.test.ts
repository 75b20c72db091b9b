/**
 * One config description across the seam: runner.h's RUNNER_MODEL_CONFIG_FIELDS is the owner; the
 * TypeScript table is generated from its text (scripts/gen-native-tables.mjs) and the addon reports
 * the table the engine was compiled with. They must agree, so a stale addon, a stale generated file
 * or a generator bug fails here. The addon reads a config generically by that table: an unknown or
 * missing key is refused by name.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'
import {describe, test} from 'node:test'

import {camelCase, MODEL_CONFIG_ENUM_VALUES, MODEL_CONFIG_ENUMS, MODEL_CONFIG_FIELDS, planModel} from '../../../src/lib/arch/index.js'
import {findPackageRoot, loadAddon} from '../../../src/lib/engine/addon.js'
import {engineError} from '../../../src/lib/engine/errors.js'
import {nativeConfig, nativeTensor} from '../../../src/lib/engine/model.js'
import {ExitCode, NATIVE_EXIT_CODES, RunnerError} from '../../../src/lib/errors.js'
import {readGgufModel} from '../../../src/lib/gguf/index.js'
import {NATIVE_STATUS_CODES} from '../../../src/lib/native-status.generated.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

describe('the model config table agrees across the seam', () => {
  test("the generated TS table deep-equals the addon's modelConfigFields() (names, kinds, presence, docs, order)", () => {
    const native = loadAddon().modelConfigFields()
    assert.deepEqual(
      native.map(({name, kind, presence, doc}) => ({name, kind, presence, doc})),
      MODEL_CONFIG_FIELDS.map((f) => ({...f})),
    )
  })

  test("the generated enum values deep-equal the addon's modelConfigEnums()", () => {
    assert.deepEqual(
      loadAddon().modelConfigEnums(),
      MODEL_CONFIG_ENUM_VALUES.map((e) => ({...e})),
    )
    assert.deepEqual(MODEL_CONFIG_ENUMS, {rope_type: {norm: 0, neox: 2}, ffn_act: {silu: 0, gelu: 1}})
  })

  test('the offsets are those of the C struct the kinds describe (4-byte scalars, pointer-aligned flag pointers)', () => {
    const pointer = process.arch === 'x64' || process.arch === 'arm64' ? 8 : 4
    let at = 0
    const want = MODEL_CONFIG_FIELDS.map((f) => {
      const size = f.kind === 'LAYER_FLAGS' ? pointer : 4
      at = Math.ceil(at / size) * size
      const offset = at
      at += size
      return {name: f.name, offset}
    })
    assert.deepEqual(
      loadAddon()
        .modelConfigFields()
        .map(({name, offset}) => ({name, offset})),
      want,
    )
  })

  test('the generated files are what runner.h says now (gen-native-tables --check)', () => {
    const r = spawnSync(process.execPath, [join(findPackageRoot(), 'scripts', 'gen-native-tables.mjs'), '--check'], {encoding: 'utf8'})
    assert.equal(r.status, 0, r.stderr)
  })

  test("the status codes: the generated list equals the addon's statusCodes(), and each has an exit code", () => {
    assert.deepEqual(loadAddon().statusCodes(), [...NATIVE_STATUS_CODES])
    for (const code of NATIVE_STATUS_CODES) assert.ok(code in NATIVE_EXIT_CODES, code)
    assert.equal(NATIVE_EXIT_CODES.ENGINE_NO_MEMORY, ExitCode.failure, 'out of memory is a failure, never usage')
  })
})

describe('nativeConfig and the addon read the config by the table', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const STORIES = sharedPath('models', 'stories260K.gguf')
  const plan = planModel(readGgufModel(STORIES))
  const tensors = plan.tensors.map(nativeTensor)

  test('every ModelConfig key but the TS-only facts is the camelCase of a runner.h field, and nativeConfig writes its C name', () => {
    const fieldKeys = new Set<string>(MODEL_CONFIG_FIELDS.map((f) => camelCase(f.name)))
    const tsOnly = Object.keys(plan.config).filter((k) => !fieldKeys.has(k))
    assert.deepEqual(tsOnly.sort(), ['architecture', 'ropeScaling', 'tiedEmbeddings'])
    const native = nativeConfig(plan.config)
    for (const [key, value] of Object.entries(native)) {
      const f = MODEL_CONFIG_FIELDS.find((x) => x.name === key)
      assert.ok(f, `${key} is a field`)
      assert.ok(camelCase(key) in plan.config, `${key} comes from ModelConfig.${camelCase(key)}`)
      if (f.kind === 'LAYER_FLAGS') assert.ok(value instanceof Uint8Array && value.length === plan.config.nLayer)
    }
    assert.equal(native.rope_type, 0, "llama's rope_type 'norm' goes as runner.h's RUNNER_ROPE_NORM = 0")
    for (const f of MODEL_CONFIG_FIELDS) if (f.presence === 'REQUIRED') assert.ok(f.name in native, `required ${f.name} is given`)
  })

  function refusedSync(fn: () => unknown, ...mentions: string[]): void {
    assert.throws(fn, (e: unknown) => {
      assert.ok(e instanceof Error)
      assert.equal(Reflect.get(e, 'code'), 'ENGINE_INVALID_ARGUMENT', e.message)
      for (const m of mentions) assert.ok(e.message.includes(m), `"${e.message}" names ${m}`)
      const converted = engineError(e)
      assert.ok(converted instanceof RunnerError && converted.exitCode === ExitCode.usage, 'exit 2 (usage)')
      return true
    })
  }

  test('an unknown key is refused by name (a camelCase key is not a field)', () => {
    const config = nativeConfig(plan.config)
    refusedSync(
      () => loadAddon().modelLoad({...config, nVocab: 512} as typeof config, [STORIES], tensors),
      'config.nVocab',
      'not a model config field',
    )
    refusedSync(() => loadAddon().modelLoad({...config, rope_kind: 2} as typeof config, [STORIES], tensors), 'config.rope_kind')
  })

  test('a missing required field is refused by name; a missing optional one is 0 (not set)', async () => {
    const config = nativeConfig(plan.config)
    for (const f of MODEL_CONFIG_FIELDS.filter((x) => x.presence === 'REQUIRED')) {
      const {[f.name]: _, ...rest} = config
      refusedSync(() => loadAddon().modelLoad(rest as typeof config, [STORIES], tensors), `config.${f.name}`, 'missing')
    }
    const {embedding_scale: _, ...withoutOptional} = {...config, embedding_scale: 1}
    loadAddon().modelFree(await loadAddon().modelLoad(withoutOptional, [STORIES], tensors))
  })

  test('a flag field of the wrong length or type is refused by name', () => {
    const config = nativeConfig(plan.config)
    refusedSync(
      () => loadAddon().modelLoad({...config, attn_removed: new Uint8Array(2)}, [STORIES], tensors),
      'config.attn_removed',
      'one flag per layer (5)',
    )
    refusedSync(
      () => loadAddon().modelLoad({...config, swa_layers: [0, 0, 0, 0, 0] as unknown as Uint8Array}, [STORIES], tensors),
      'config.swa_layers',
      'Uint8Array',
    )
  })
})

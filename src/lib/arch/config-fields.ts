/**
 * The model config's fields as TypeScript sees them, derived from the one declaration in
 * native/include/runner.h (RUNNER_MODEL_CONFIG_FIELDS), which scripts/gen-native-tables.mjs turns
 * into ./config-fields.generated.ts. Nothing here names a field: a field added to runner.h appears
 * in ModelConfig (camelCase), in the object the addon reads (snake_case) and in nativeConfig()'s loop.
 * test/lib/arch/config-fields.test.ts checks the generated table against the built addon's.
 */
import {MODEL_CONFIG_ENUMS, MODEL_CONFIG_FIELDS} from './config-fields.generated.js'

export {MODEL_CONFIG_ENUM_VALUES, MODEL_CONFIG_ENUMS, MODEL_CONFIG_FIELDS} from './config-fields.generated.js'

export type ConfigField = (typeof MODEL_CONFIG_FIELDS)[number]
export type ConfigFieldName = ConfigField['name']
type Enums = typeof MODEL_CONFIG_ENUMS

/** snake_case → camelCase at the type level: n_ctx_train → nCtxTrain. */
export type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S

/** snake_case → camelCase at run time, the same rule. */
export function camelCase<S extends string>(name: S): CamelCase<S> {
  const out: string = name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())
  return out as CamelCase<S>
}

/** The TypeScript value of a field: enum fields their names, flags one boolean per block, else a number. */
type TsValue<F extends ConfigField> = F['name'] extends keyof Enums
  ? keyof Enums[F['name']]
  : F['kind'] extends 'LAYER_FLAGS'
    ? readonly boolean[]
    : number

/** The value the addon reads: enum fields their C value, flags a Uint8Array of n_layer. */
type NativeValue<F extends ConfigField> = F['kind'] extends 'LAYER_FLAGS' ? Uint8Array : number

type Required_<F> = F extends {presence: 'REQUIRED'} ? F : never
type Optional_<F> = F extends {presence: 'OPTIONAL'} ? F : never

/** The part of ModelConfig that crosses the seam: one camelCase key per runner.h field. */
export type NativeBackedConfig = {
  readonly [F in Required_<ConfigField> as CamelCase<F['name']>]: TsValue<F>
} & {
  readonly [F in Optional_<ConfigField> as CamelCase<F['name']>]?: TsValue<F>
}

/** runner_model_config as the addon's modelLoad reads it: the C names, C values. */
export type NativeModelConfig = {
  [F in Required_<ConfigField> as F['name']]: NativeValue<F>
} & {
  [F in Optional_<ConfigField> as F['name']]?: NativeValue<F>
}

/** The C value of an enum field's name (ModelConfig.ropeType 'neox' → 2). */
export function enumValue(field: keyof Enums, name: string): number {
  const values: Readonly<Record<string, number>> = MODEL_CONFIG_ENUMS[field]
  const v = values[name]
  if (v === undefined) throw new Error(`${name} is not a value of ${field} (${Object.keys(values).join(', ')})`)
  return v
}

export function isEnumField(name: string): name is keyof Enums {
  return Object.hasOwn(MODEL_CONFIG_ENUMS, name)
}

export {ARCHITECTURES, ENGINE_WEIGHT_TYPES, HPARAM_LIMITS, planModel} from './plan.js'
export {roleId, TENSOR_ROLES, type TensorRole} from './roles.js'
export type {ArchitectureSpec, ModelConfig, ModelPlan, TensorBinding, TensorSpec} from './types.js'
export {
  camelCase,
  type CamelCase,
  type ConfigField,
  type ConfigFieldName,
  enumValue,
  isEnumField,
  MODEL_CONFIG_ENUM_VALUES,
  MODEL_CONFIG_ENUMS,
  MODEL_CONFIG_FIELDS,
  type NativeBackedConfig,
  type NativeModelConfig,
} from './config-fields.js'

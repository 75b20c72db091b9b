export {ARCHITECTURES, ENGINE_WEIGHT_TYPES, HPARAM_LIMITS, planModel, withRopeOverrides} from './plan.js'
export {
  checkRopeOverrides,
  type DeclaredRope,
  ROPE_OPTION_NAMES,
  ROPE_SCALING_TYPES,
  type RopeOverrides,
  type RopeScaling,
  type RopeScalingType,
  YARN_DEFAULTS,
} from './rope-scaling.js'
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

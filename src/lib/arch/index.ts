export {ARCHITECTURES, ENGINE_WEIGHT_TYPES, HPARAM_LIMITS, planModel} from './plan.js'
export {roleId, TENSOR_ROLES, type TensorRole} from './roles.js'
export type {ArchitectureSpec, ModelConfig, ModelPlan, TensorBinding, TensorSpec} from './types.js'

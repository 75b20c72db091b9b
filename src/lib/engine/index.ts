/** Public face of the engine seam. Only ./addon.ts touches the native addon itself. */
export {ADDON_ABI_VERSION, CPU_FEATURE_NAMES, cpuFeatures, loadAddon} from './addon.js'
export type {CpuFeatureName, CpuFeatures, NativeAddon} from './addon.js'

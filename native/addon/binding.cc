// The Node-API face of the engine: converts between JavaScript values and the C API in
// include/runner.h. No arithmetic lives here. C++ exceptions (Napi::Error and, with
// NODE_ADDON_API_CPP_EXCEPTIONS_ALL, anything else such as std::bad_alloc) are caught by
// node-addon-api at each callback and rethrown as JavaScript errors, so none can unwind
// into Node and end the process. Nothing here writes to stdout.


#include <string>

#include "bindings.h"
#include "runner.h"

namespace {

// cpuFeatures() -> {sse4_2: boolean, avx2: boolean, ...}: one key per runner_cpu_feature,
// named by the engine's own table so the names have a single owner.
Napi::Value CpuFeatures(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const runner_cpu_mask mask = runner_cpu_features();
  Napi::Object out = Napi::Object::New(env);
  for (int f = 0; f < RUNNER_CPU_FEATURE_COUNT; ++f) {
    const char* name = runner_cpu_feature_name(f);
    if (name == nullptr) {
      throw Napi::Error::New(env, "engine feature table has no name for feature index " + std::to_string(f));
    }
    out.Set(name, Napi::Boolean::New(env, runner_cpu_has(mask, static_cast<runner_cpu_feature>(f)) != 0));
  }
  return out;
}

// version() -> package version the engine was built as, e.g. "0.1.0".
Napi::Value Version(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), runner_version());
}

// abiVersion() -> RUNNER_ABI_VERSION; addon.ts refuses a build whose value it does not expect.
Napi::Value AbiVersion(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), runner_abi_version());
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  runner_addon::RegisterKernelBindings(env, exports);
  runner_addon::RegisterSamplerBindings(env, exports);
  runner_addon::RegisterEngineBindings(env, exports);
  exports.Set("cpuFeatures", Napi::Function::New(env, CpuFeatures, "cpuFeatures"));
  exports.Set("version", Napi::Function::New(env, Version, "version"));
  exports.Set("abiVersion", Napi::Function::New(env, AbiVersion, "abiVersion"));
  return exports;
}

}  // namespace

NODE_API_MODULE(runner_native, Init)

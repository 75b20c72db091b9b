// The Node-API face of the engine: converts between JavaScript values and the C API in
// include/runner.h, the only engine header it includes. No arithmetic lives here. C++ exceptions on
// the main thread (Napi::Error and, with NODE_ADDON_API_CPP_EXCEPTIONS_ALL, anything else such as
// std::bad_alloc) are caught by node-addon-api at each callback and rethrown as JavaScript errors;
// workers catch their own (args.h GuardExecute). None can unwind into Node and end the process.
// Nothing here writes to stdout. Test hooks are in a separate addon (native/addon-test).


#include <string>

#include "args.h"
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
      throw runner_addon::StatusError(env, RUNNER_ERR_INTERNAL, "engine feature table has no name for feature index " + std::to_string(f));
    }
    out.Set(name, Napi::Boolean::New(env, runner_cpu_has(mask, static_cast<runner_cpu_feature>(f)) != 0));
  }
  return out;
}

// amxStatus() -> {state: "absent" | "off" | "not-built" | "permission-denied" | "selfcheck-failed" |
// "active" | "emulated", tiles: number}: whether prompt matmuls use AMX in this process (decided on
// the first call, self-check included) and how many 16 x 16 tiles they have computed with it.
Napi::Value AmxStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int state = runner_amx_state_get();
  const char* name = runner_amx_state_name(state);
  if (name == nullptr) throw runner_addon::StatusError(env, RUNNER_ERR_INTERNAL, "engine AMX state " + std::to_string(state) + " has no name");
  Napi::Object out = Napi::Object::New(env);
  out.Set("state", Napi::String::New(env, name));
  out.Set("tiles", Napi::Number::New(env, static_cast<double>(runner_amx_tiles())));
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

// statusCodes() -> the code name of every runner_status, in value order (src/lib/errors.ts maps
// each to an exit code; a test checks the two lists agree).
Napi::Value StatusCodes(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env());
  for (int32_t s = 0; runner_status_code(s) != nullptr; s++) out.Set(static_cast<uint32_t>(s), runner_status_code(s));
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  runner_addon::RegisterTypeBindings(env, exports);
  runner_addon::RegisterConfigBindings(env, exports);
  runner_addon::RegisterSamplerBindings(env, exports);
  runner_addon::RegisterEngineBindings(env, exports);
  runner_addon::RegisterGrammarBindings(env, exports);
  runner_addon::RegisterTrainBindings(env, exports);
  exports.Set("cpuFeatures", Napi::Function::New(env, CpuFeatures, "cpuFeatures"));
  exports.Set("amxStatus", Napi::Function::New(env, AmxStatus, "amxStatus"));
  exports.Set("version", Napi::Function::New(env, Version, "version"));
  exports.Set("abiVersion", Napi::Function::New(env, AbiVersion, "abiVersion"));
  exports.Set("statusCodes", Napi::Function::New(env, StatusCodes, "statusCodes"));
  return exports;
}

}  // namespace

NODE_API_MODULE(runner_native, Init)

// Each area of the engine registers its JavaScript functions from its own file, so that areas can be
// added without editing one shared binding file. binding.cc's Init calls every Register* below.
#pragma once
#include <napi.h>

namespace runner_addon {
// kernels_binding.cc: typeTraits() and the test hooks that run one kernel variant on given bytes.
void RegisterKernelBindings(Napi::Env env, Napi::Object exports);
// sampler_binding.cc: test hooks for the native sampler over a logits array.
void RegisterSamplerBindings(Napi::Env env, Napi::Object exports);
// engine_binding.cc: models, contexts, decode, generate.
void RegisterEngineBindings(Napi::Env env, Napi::Object exports);
}  // namespace runner_addon

// Each area of the addon registers its JavaScript functions from its own file, so that areas can be
// added without editing one shared binding file. binding.cc's Init calls every Register* below.
// The addon reaches the engine through runner.h only.
#pragma once
#include <napi.h>

#include <vector>

#include "runner.h"

namespace runner_addon {
// types_binding.cc: typeTraits(), quantizeRef(), toFloat().
void RegisterTypeBindings(Napi::Env env, Napi::Object exports);
// sampler_binding.cc: the native sampler over a logits array.
void RegisterSamplerBindings(Napi::Env env, Napi::Object exports);
// Sampler parameters read from a JavaScript object ({temperature, topK, topP, minP, repeatPenalty,
// presencePenalty, frequencyPenalty, penaltyLastN, seed, nTopLogprobs, logprobs?, logitBias?,
// exemptTokens?}), validated by name; shared by samplerCreate and generate. Bind() points the
// params at the owned arrays (call it again after moving the object).
struct SamplerParams {
  runner_sampler_params p{};
  std::vector<int32_t> bias_tokens;
  std::vector<float> bias_values;
  std::vector<int32_t> exempt;
  const runner_sampler_params &Bind();
};
SamplerParams ReadSamplerParams(const Napi::Env &env, const Napi::Object &obj);
// engine_binding.cc: models, contexts, decode, generate, and the config/role/status tables.
void RegisterEngineBindings(Napi::Env env, Napi::Object exports);
}  // namespace runner_addon

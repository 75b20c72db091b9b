// Each area of the addon registers its JavaScript functions from its own file, so that areas can be
// added without editing one shared binding file. binding.cc's Init calls every Register* below.
// The addon reaches the engine through runner.h only.
#pragma once
#include <napi.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <utility>
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
// A runner_model_config and the storage its LAYER_FLAGS pointers point into. Bind() sets the
// pointers (call it again after moving the object).
struct ConfigArg {
  runner_model_config cfg{};
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> flags;  // (offset, n_layer flags)
  const runner_model_config &Bind() {
    for (auto &f : flags) {
      const uint8_t *p = f.second.data();
      std::memcpy(reinterpret_cast<char *>(&cfg) + f.first, &p, sizeof p);
    }
    return cfg;
  }
};

// config: an object whose keys are runner_model_config's field names (snake_case, as in runner.h).
// An unknown key or a missing REQUIRED field is refused by name; LAYER_FLAGS are a Uint8Array of
// n_layer flags or absent.
ConfigArg ReadConfig(const Napi::Env &env, const Napi::Object &config);
// config_binding.cc: ReadConfig, modelConfigFields(), modelConfigEnums().
void RegisterConfigBindings(Napi::Env env, Napi::Object exports);
// grammar_binding.cc: grammar programs, token tries and matchers (constrained decoding).
void RegisterGrammarBindings(Napi::Env env, Napi::Object exports);
// A matcher and what it points into (its grammar and trie stay alive while it does). `busy` while a
// generate worker advances it: every other call on it is refused (ENGINE_BUSY).
struct GrammarHandle {
  runner_grammar *grammar = nullptr;
  ~GrammarHandle() { runner_grammar_free(grammar); }
};
struct TrieHandle {
  runner_token_trie *trie = nullptr;
  ~TrieHandle() { runner_token_trie_free(trie); }
};
struct MatcherHandle {
  runner_matcher *matcher = nullptr;
  std::shared_ptr<GrammarHandle> grammar;
  std::shared_ptr<TrieHandle> trie;
  std::atomic<bool> busy{false};
  bool disposed = false;
  ~MatcherHandle() { runner_matcher_free(matcher); }
};
// The matcher behind a handle, marked busy (the caller clears `busy` when its worker ends); throws
// ENGINE_INVALID_ARGUMENT / ENGINE_DISPOSED / ENGINE_BUSY naming `what`.
std::shared_ptr<MatcherHandle> AcquireMatcher(const Napi::Value &v, const char *what);
// engine_binding.cc: models, contexts, decode, generate, and the tensor-role table.
void RegisterEngineBindings(Napi::Env env, Napi::Object exports);
// The model behind a model handle (ENGINE_INVALID_ARGUMENT / ENGINE_DISPOSED naming `what`), and a
// reference that keeps its weights mapped while the holder lives.
std::shared_ptr<void> AcquireModel(const Napi::Value &v, const char *what, runner_model **out);
// train_binding.cc: LoRA trainers (runner_trainer_*).
void RegisterTrainBindings(Napi::Env env, Napi::Object exports);
}  // namespace runner_addon

// The sampler's generator (native/src/sample/rng.h) exposed so tests can check it against the
// documented algorithm (docs/sampling.md).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../addon/args.h"
#include "hooks.h"

extern "C" {
#include "sample/rng.h"
}

namespace {

using runner_addon::Kind;
using runner_addon::Throw;

uint64_t RequireU64(const Napi::Env& env, const Napi::Value& v, const std::string& what) {
  if (!v.IsBigInt()) Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", what + " must be a bigint");
  bool lossless = false;
  const uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM", what + " = " + v.ToString().Utf8Value() + " must be in [0, 2^64)");
  return x;
}

uint32_t RequireCount(const Napi::Env& env, const Napi::Value& v, const char* fn) {
  const double n = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(std::trunc(n) == n && n >= 0 && n <= (1 << 20))) {
    Throw(env, Kind::kRangeError, "SAMPLER_BAD_ARGUMENT", std::string(fn) + ": n must be an integer in [0, 2^20]");
  }
  return static_cast<uint32_t>(n);
}

Napi::Value U64Array(const Napi::Env& env, const std::vector<uint64_t>& xs) {
  Napi::BigUint64Array out = Napi::BigUint64Array::New(env, xs.size());
  for (size_t i = 0; i < xs.size(); ++i) out[i] = xs[i];
  return out;
}

// samplerTestSplitMix64(seed: bigint, n) -> BigUint64Array: SplitMix64 outputs from state `seed`.
Napi::Value SamplerTestSplitMix64(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t state = RequireU64(env, info[0], "samplerTestSplitMix64: seed");
  const uint32_t n = RequireCount(env, info[1], "samplerTestSplitMix64");
  std::vector<uint64_t> xs(n);
  for (uint32_t i = 0; i < n; ++i) xs[i] = runner_splitmix64_next(&state);
  return U64Array(env, xs);
}

// samplerTestXoshiro256ss(state: bigint[4], n) -> BigUint64Array: xoshiro256** from a raw state.
Napi::Value SamplerTestXoshiro256ss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray() || info[0].As<Napi::Array>().Length() != 4) {
    Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", "samplerTestXoshiro256ss: state must be an array of 4 bigints");
  }
  Napi::Array st = info[0].As<Napi::Array>();
  runner_rng rng;
  for (uint32_t i = 0; i < 4; ++i) rng.s[i] = RequireU64(env, st.Get(i), "samplerTestXoshiro256ss: state[" + std::to_string(i) + "]");
  const uint32_t n = RequireCount(env, info[1], "samplerTestXoshiro256ss");
  std::vector<uint64_t> xs(n);
  for (uint32_t i = 0; i < n; ++i) xs[i] = runner_rng_next(&rng);
  return U64Array(env, xs);
}

// samplerTestGenerator(seed: bigint, n) -> BigUint64Array: the sampler's own stream for `seed`.
Napi::Value SamplerTestGenerator(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t seed = RequireU64(env, info[0], "samplerTestGenerator: seed");
  const uint32_t n = RequireCount(env, info[1], "samplerTestGenerator");
  runner_rng rng;
  runner_rng_seed(&rng, seed);
  std::vector<uint64_t> xs(n);
  for (uint32_t i = 0; i < n; ++i) xs[i] = runner_rng_next(&rng);
  return U64Array(env, xs);
}

}  // namespace

void RegisterSamplerHooks(Napi::Env env, Napi::Object exports) {
  exports.Set("samplerTestSplitMix64", Napi::Function::New(env, SamplerTestSplitMix64, "samplerTestSplitMix64"));
  exports.Set("samplerTestXoshiro256ss", Napi::Function::New(env, SamplerTestXoshiro256ss, "samplerTestXoshiro256ss"));
  exports.Set("samplerTestGenerator", Napi::Function::New(env, SamplerTestGenerator, "samplerTestGenerator"));
}

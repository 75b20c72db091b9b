// The sampler's Node-API face (runner.h, "sampling"): create a sampler from a parameter object, feed
// it tokens, sample from a Float32Array of logits. The engine's generate loop calls the C API
// directly; these functions serve src/lib/engine/sampler.ts and the tests. No arithmetic here: only
// conversion and argument checks. Every bad argument throws a JavaScript error with a `code` and a
// message naming the argument; nothing here can end the process. The generator's test hooks live in
// the test addon (native/addon-test).
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "args.h"
#include "bindings.h"

namespace {

// Marks the externals this file made, so a foreign External is refused instead of reinterpreted.
constexpr napi_type_tag kSamplerTag = {0x7a1c0b7e5a3d4f21ULL, 0x9d2e6b0c4f8a1357ULL};

struct SamplerBox {
  runner_sampler* sampler = nullptr;  // NULL once samplerFree ran
  int32_t n_vocab = 0;
};

using runner_addon::Kind;
using runner_addon::NumberText;
using runner_addon::Throw;

double RequireNumber(const Napi::Env& env, const Napi::Object& obj, const char* name) {
  Napi::Value v = obj.Get(name);
  if (!v.IsNumber()) Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", std::string("params.") + name + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

// A JS number stored into a C float: finite values beyond float range would turn into infinity
// and be reported under a value the caller never wrote, so they are refused here by name.
float RequireFloat(const Napi::Env& env, const Napi::Object& obj, const char* name) {
  const double x = RequireNumber(env, obj, name);
  if (std::isfinite(x) && std::fabs(x) > static_cast<double>(FLT_MAX)) {
    Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM",
          std::string("params.") + name + " = " + NumberText(x) + " is outside the float32 range");
  }
  return static_cast<float>(x);
}

int32_t ToInt32(const Napi::Env& env, double x, const std::string& what) {
  if (!(std::isfinite(x) && std::trunc(x) == x && x >= INT32_MIN && x <= INT32_MAX)) {
    Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM", what + " = " + NumberText(x) + " must be a 32-bit integer");
  }
  return static_cast<int32_t>(x);
}

int32_t RequireInt32(const Napi::Env& env, const Napi::Object& obj, const char* name) {
  return ToInt32(env, RequireNumber(env, obj, name), std::string("params.") + name);
}

uint64_t RequireU64(const Napi::Env& env, const Napi::Value& v, const std::string& what) {
  if (!v.IsBigInt()) Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", what + " must be a bigint");
  bool lossless = false;
  const uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) {
    Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM",
          what + " = " + v.ToString().Utf8Value() + " must be in [0, 2^64)");
  }
  return x;
}

// logitBias: a Map<number, number> or an array of [token, value] pairs.
void ReadLogitBias(const Napi::Env& env, const Napi::Value& v, std::vector<int32_t>& tokens, std::vector<float>& values) {
  Napi::Value list = v;
  if (!v.IsArray()) {
    Napi::Function map_ctor = env.Global().Get("Map").As<Napi::Function>();
    if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(map_ctor)) {
      Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT",
            "params.logitBias must be a Map<number, number> or an array of [token, value] pairs");
    }
    Napi::Function array_from = env.Global().Get("Array").As<Napi::Object>().Get("from").As<Napi::Function>();
    list = array_from.Call({v});
  }
  Napi::Array arr = list.As<Napi::Array>();
  const uint32_t n = arr.Length();
  if (n > static_cast<uint32_t>(INT32_MAX)) Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM", "params.logitBias has too many entries");
  tokens.reserve(n);
  values.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string where = "params.logitBias[" + std::to_string(i) + "]";
    Napi::Value entry = arr.Get(i);
    if (!entry.IsArray() || entry.As<Napi::Array>().Length() != 2) {
      Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", where + " must be a [token, value] pair");
    }
    Napi::Array pair = entry.As<Napi::Array>();
    Napi::Value t = pair.Get(0u);
    Napi::Value b = pair.Get(1u);
    if (!t.IsNumber() || !b.IsNumber()) {
      Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", where + " must hold two numbers");
    }
    tokens.push_back(ToInt32(env, t.As<Napi::Number>().DoubleValue(), where + " token"));
    const double x = b.As<Napi::Number>().DoubleValue();
    if (std::isfinite(x) && std::fabs(x) > static_cast<double>(FLT_MAX)) {
      Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM", where + " value = " + NumberText(x) + " is outside the float32 range");
    }
    values.push_back(static_cast<float>(x));
  }
}

void ReadTokenList(const Napi::Env& env, const Napi::Value& v, const char* name, std::vector<int32_t>& out) {
  if (!v.IsArray()) Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", std::string("params.") + name + " must be an array of token ids");
  Napi::Array arr = v.As<Napi::Array>();
  const uint32_t n = arr.Length();
  if (n > static_cast<uint32_t>(INT32_MAX)) Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM", std::string("params.") + name + " is too long");
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string where = std::string("params.") + name + "[" + std::to_string(i) + "]";
    Napi::Value t = arr.Get(i);
    if (!t.IsNumber()) Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", where + " must be a number");
    out.push_back(ToInt32(env, t.As<Napi::Number>().DoubleValue(), where));
  }
}

SamplerBox* GetBox(const Napi::CallbackInfo& info, const char* fn) {
  Napi::Env env = info.Env();
  Napi::Value v = info[0];
  if (!v.IsExternal() || !v.As<Napi::External<SamplerBox>>().CheckTypeTag(&kSamplerTag)) {
    Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", std::string(fn) + ": handle is not a sampler handle from samplerCreate");
  }
  SamplerBox* box = v.As<Napi::External<SamplerBox>>().Data();
  if (box == nullptr || box->sampler == nullptr) {
    Throw(env, Kind::kError, "SAMPLER_FREED", std::string(fn) + ": the sampler handle was already freed by samplerFree");
  }
  return box;
}

}  // namespace

namespace runner_addon {

const runner_sampler_params &SamplerParams::Bind() {
  p.bias_tokens = bias_tokens.data();
  p.bias_values = bias_values.data();
  p.n_bias = static_cast<int32_t>(bias_tokens.size());
  p.exempt_tokens = exempt.data();
  p.n_exempt = static_cast<int32_t>(exempt.size());
  return p;
}

SamplerParams ReadSamplerParams(const Napi::Env &env, const Napi::Object &obj) {
  SamplerParams out;
  runner_sampler_params &p = out.p;
  p.temperature = RequireFloat(env, obj, "temperature");
  p.top_k = RequireInt32(env, obj, "topK");
  p.top_p = RequireFloat(env, obj, "topP");
  p.min_p = RequireFloat(env, obj, "minP");
  p.repeat_penalty = RequireFloat(env, obj, "repeatPenalty");
  p.presence_penalty = RequireFloat(env, obj, "presencePenalty");
  p.frequency_penalty = RequireFloat(env, obj, "frequencyPenalty");
  p.penalty_last_n = RequireInt32(env, obj, "penaltyLastN");
  p.seed = RequireU64(env, obj.Get("seed"), "params.seed");
  p.n_top_logprobs = RequireInt32(env, obj, "nTopLogprobs");
  Napi::Value logprobs = obj.Get("logprobs");
  if (!logprobs.IsUndefined() && !logprobs.IsBoolean()) {
    Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", "params.logprobs must be a boolean when given");
  }
  p.logprobs = logprobs.IsBoolean() && logprobs.As<Napi::Boolean>().Value() ? 1 : 0;
  Napi::Value bias = obj.Get("logitBias");
  if (!bias.IsUndefined()) ReadLogitBias(env, bias, out.bias_tokens, out.bias_values);
  Napi::Value ex = obj.Get("exemptTokens");
  if (!ex.IsUndefined()) ReadTokenList(env, ex, "exemptTokens", out.exempt);
  return out;
}

}  // namespace runner_addon

namespace {

// samplerCreate(params, nVocab) -> handle
Napi::Value SamplerCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject()) {
    Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", "samplerCreate(params, nVocab): params must be an object");
  }
  if (!info[1].IsNumber()) Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", "samplerCreate: nVocab must be a number");
  const int32_t n_vocab = ToInt32(env, info[1].As<Napi::Number>().DoubleValue(), "nVocab");
  Napi::Object obj = info[0].As<Napi::Object>();

  runner_addon::SamplerParams params = runner_addon::ReadSamplerParams(env, obj);
  const runner_sampler_params &p = params.Bind();

  char err[256] = {0};
  runner_sampler* s = nullptr;
  const runner_status st = runner_sampler_create(&p, n_vocab, &s, err, static_cast<int32_t>(sizeof err));
  // Out of memory keeps its own code (exit 1), never the parameter refusal's (exit 2).
  if (st == RUNNER_ERR_NO_MEMORY) Throw(env, Kind::kError, runner_status_code(st), std::string("samplerCreate: ") + err);
  if (st != RUNNER_OK) Throw(env, Kind::kRangeError, "SAMPLER_BAD_PARAM", std::string("samplerCreate: ") + err);

  SamplerBox* box = new SamplerBox{s, n_vocab};  // std::bad_alloc becomes a JS error (CPP_EXCEPTIONS_ALL)
  Napi::External<SamplerBox> handle;
  try {
    handle = Napi::External<SamplerBox>::New(env, box, [](Napi::Env, SamplerBox* b) {
      runner_sampler_free(b->sampler);
      delete b;
    });
  } catch (...) {
    runner_sampler_free(s);
    delete box;
    throw;
  }
  handle.TypeTag(&kSamplerTag);
  return handle;
}

// samplerFree(handle): frees now; later use of the handle is refused. Freeing twice is refused too.
Napi::Value SamplerFree(const Napi::CallbackInfo& info) {
  SamplerBox* box = GetBox(info, "samplerFree");
  runner_sampler_free(box->sampler);
  box->sampler = nullptr;
  return info.Env().Undefined();
}

// samplerAccept(handle, token)
Napi::Value SamplerAccept(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SamplerBox* box = GetBox(info, "samplerAccept");
  if (!info[1].IsNumber()) Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", "samplerAccept: token must be a number");
  const double t = info[1].As<Napi::Number>().DoubleValue();
  if (!(std::trunc(t) == t && t >= 0 && t < static_cast<double>(box->n_vocab))) {
    Throw(env, Kind::kRangeError, "SAMPLER_BAD_ARGUMENT",
          "samplerAccept: token = " + NumberText(t) + " must be an integer in [0, " + std::to_string(box->n_vocab) + ")");
  }
  if (runner_sampler_accept(box->sampler, static_cast<int32_t>(t)) != 0) {
    Throw(env, Kind::kRangeError, "SAMPLER_BAD_ARGUMENT", "samplerAccept: token = " + NumberText(t) + " refused");
  }
  return env.Undefined();
}

// samplerSample(handle, logits: Float32Array) -> {token, logprob: number | null, top: [id, logprob][]}
Napi::Value SamplerSample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SamplerBox* box = GetBox(info, "samplerSample");
  Napi::Value v = info[1];
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    Throw(env, Kind::kTypeError, "SAMPLER_BAD_ARGUMENT", "samplerSample: logits must be a Float32Array");
  }
  Napi::Float32Array logits = v.As<Napi::Float32Array>();
  if (logits.ElementLength() != static_cast<size_t>(box->n_vocab)) {
    Throw(env, Kind::kRangeError, "SAMPLER_BAD_ARGUMENT",
          "samplerSample: logits has " + std::to_string(logits.ElementLength()) + " entries, the sampler's nVocab is " +
              std::to_string(box->n_vocab));
  }
  runner_sample_result r;
  const int32_t token = runner_sampler_sample(box->sampler, logits.Data(), &r);
  if (token == RUNNER_SAMPLE_INVALID) Throw(env, Kind::kError, "SAMPLER_INTERNAL", "samplerSample: the sampler refused its arguments");

  Napi::Object out = Napi::Object::New(env);
  out.Set("token", Napi::Number::New(env, token));
  out.Set("logprob", std::isnan(r.logprob) ? env.Null() : Napi::Number::New(env, r.logprob));
  Napi::Array top = Napi::Array::New(env, static_cast<size_t>(r.n_top));
  for (int32_t i = 0; i < r.n_top; ++i) {
    Napi::Array pair = Napi::Array::New(env, 2);
    pair.Set(0u, Napi::Number::New(env, r.top_tokens[i]));
    pair.Set(1u, Napi::Number::New(env, r.top_logprobs[i]));
    top.Set(static_cast<uint32_t>(i), pair);
  }
  out.Set("top", top);
  return out;
}

}  // namespace

namespace runner_addon {
void RegisterSamplerBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("samplerCreate", Napi::Function::New(env, SamplerCreate, "samplerCreate"));
  exports.Set("samplerFree", Napi::Function::New(env, SamplerFree, "samplerFree"));
  exports.Set("samplerAccept", Napi::Function::New(env, SamplerAccept, "samplerAccept"));
  exports.Set("samplerSample", Napi::Function::New(env, SamplerSample, "samplerSample"));
}
}  // namespace runner_addon

// The engine's JavaScript face: models, contexts, decode and generate. Long calls run on libuv
// worker threads (Napi::AsyncWorker) and resolve Promises; generated tokens stream to JavaScript
// through a ThreadSafeFunction, never blocking the generating thread. No arithmetic here.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "runner.h"


namespace runner_addon {
namespace {

constexpr int kErrLen = 512;

const char *StatusCode(runner_status st) {
  switch (st) {
    case RUNNER_OK: return "ENGINE_OK";
    case RUNNER_ERR_INVALID_ARGUMENT: return "ENGINE_INVALID_ARGUMENT";
    case RUNNER_ERR_IO: return "ENGINE_IO";
    case RUNNER_ERR_MODEL: return "ENGINE_BAD_MODEL";
    case RUNNER_ERR_NO_MEMORY: return "ENGINE_NO_MEMORY";
    case RUNNER_ERR_UNSUPPORTED: return "ENGINE_UNSUPPORTED";
    case RUNNER_ERR_CONTEXT_FULL: return "ENGINE_CONTEXT_FULL";
    case RUNNER_ERR_ABORTED: return "ENGINE_ABORTED";
  }
  return "ENGINE_ERROR";
}

Napi::Error EngineError(Napi::Env env, runner_status st, const std::string &msg) {
  Napi::Error e = Napi::Error::New(env, msg);
  e.Set("code", Napi::String::New(env, StatusCode(st)));
  return e;
}

// Handles own their native object; `busy` refuses a second call while a worker uses it, and a
// dispose during a call is deferred to the call's end.
struct ModelHandle {
  runner_model *model = nullptr;
  std::atomic<int> users{0};
  bool disposed = false;
  ~ModelHandle() { runner_model_free(model); }
};

struct ContextHandle {
  runner_context *ctx = nullptr;
  std::shared_ptr<ModelHandle> model;  // keeps the weights mapped while the context lives
  std::atomic<bool> busy{false};
  bool disposed = false;
  ~ContextHandle() { runner_context_free(ctx); }
};

using ModelRef = std::shared_ptr<ModelHandle>;
using ContextRef = std::shared_ptr<ContextHandle>;

// Type tags: a model handle passed where a context is expected (or any other External) is refused
// by name instead of being reinterpreted.
template <typename T> struct HandleTag;
template <> struct HandleTag<ModelHandle> { static constexpr napi_type_tag tag = {0x52554e4e45524d4fULL, 0x44454c48414e444cULL}; };
template <> struct HandleTag<ContextHandle> { static constexpr napi_type_tag tag = {0x52554e4e4552434fULL, 0x4e5445585448444cULL}; };

template <typename T>
Napi::External<std::shared_ptr<T>> Wrap(Napi::Env env, std::shared_ptr<T> p) {
  auto ext = Napi::External<std::shared_ptr<T>>::New(env, new std::shared_ptr<T>(std::move(p)),
                                                     [](Napi::Env, std::shared_ptr<T> *h) { delete h; });
  ext.TypeTag(&HandleTag<T>::tag);
  return ext;
}

// The handle's own shared_ptr slot (reset by dispose), after checking it is a handle of this kind.
template <typename T>
std::shared_ptr<T> &Slot(const Napi::Value &v, const char *what) {
  if (!v.IsExternal() || !v.As<Napi::External<std::shared_ptr<T>>>().CheckTypeTag(&HandleTag<T>::tag))
    throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a " + what + " handle from the engine");
  return *v.As<Napi::External<std::shared_ptr<T>>>().Data();
}

template <typename T>
std::shared_ptr<T> Unwrap(const Napi::Value &v, const char *what) {
  auto sp = Slot<T>(v, what);
  if (!sp || sp->disposed) throw Napi::Error::New(v.Env(), std::string(what) + " has been disposed");
  return sp;
}

// An exact 32-bit integer argument, or a RangeError naming it (no silent NaN -> 0 or 1.5 -> 1).
int32_t IntArg(const Napi::Value &v, const char *what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != static_cast<double>(static_cast<int32_t>(d)))
    throw Napi::RangeError::New(v.Env(), std::string(what) + " must be a 32-bit integer");
  return static_cast<int32_t>(d);
}

int32_t GetInt(const Napi::Object &o, const char *key) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (d != static_cast<double>(static_cast<int32_t>(d)))
    throw Napi::RangeError::New(o.Env(), std::string(key) + " must be a 32-bit integer");
  return static_cast<int32_t>(d);
}

double GetDouble(const Napi::Object &o, const char *key) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

uint64_t GetU64(const Napi::Object &o, const char *key) {
  Napi::Value v = o.Get(key);
  if (v.IsBigInt()) {
    bool lossless = false;
    uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::RangeError::New(o.Env(), std::string(key) + " does not fit 64 bits");
    return x;
  }
  double d = GetDouble(o, key);
  if (d < 0 || d > 9007199254740991.0 || d != static_cast<double>(static_cast<uint64_t>(d)))
    throw Napi::RangeError::New(o.Env(), std::string(key) + " must be a non-negative integer");
  return static_cast<uint64_t>(d);
}

// ---- model load --------------------------------------------------------------------------------

struct ProgressData {
  uint64_t done, total;
};

// The outcome of a load, settled on the main thread: by OnOK when there is no progress callback,
// else by the progress ThreadSafeFunction's finalizer, which runs after every queued progress call
// has been delivered (so no progress report arrives after the promise has settled).
struct LoadState {
  Napi::Promise::Deferred deferred;
  runner_status status = RUNNER_OK;
  std::string message;
  runner_model *model = nullptr;
  explicit LoadState(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
  void Settle(Napi::Env env) {
    if (status != RUNNER_OK) {
      deferred.Reject(EngineError(env, status, message).Value());
      return;
    }
    auto h = std::make_shared<ModelHandle>();
    h->model = model;
    model = nullptr;
    deferred.Resolve(Wrap(env, h));
  }
  ~LoadState() { runner_model_free(model); }
};

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, runner_model_config cfg, std::vector<uint8_t> attn_removed, std::vector<uint8_t> ffn_removed,
             std::vector<uint8_t> swa_layers, std::vector<std::string> paths, std::vector<runner_tensor_desc> tensors,
             Napi::Function progress)
      : Napi::AsyncWorker(env), state_(std::make_shared<LoadState>(env)), cfg_(cfg), attn_removed_(std::move(attn_removed)),
        ffn_removed_(std::move(ffn_removed)), swa_layers_(std::move(swa_layers)), paths_(std::move(paths)), tensors_(std::move(tensors)) {
    cfg_.attn_removed = attn_removed_.empty() ? nullptr : attn_removed_.data();
    cfg_.ffn_removed = ffn_removed_.empty() ? nullptr : ffn_removed_.data();
    cfg_.swa_layers = swa_layers_.empty() ? nullptr : swa_layers_.data();
    if (!progress.IsEmpty()) {
      std::shared_ptr<LoadState> state = state_;
      tsfn_ = Napi::ThreadSafeFunction::New(env, progress, "runner.modelLoad.progress", 0, 1,
                                            [state](Napi::Env env) { state->Settle(env); });
    }
  }
  Napi::Promise Promise() { return state_->deferred.Promise(); }

  void Execute() override {
    std::vector<const char *> cpaths;
    for (auto &p : paths_) cpaths.push_back(p.c_str());
    char err[kErrLen] = {0};
    state_->status = runner_model_load(&cfg_, cpaths.data(), static_cast<int32_t>(cpaths.size()), tensors_.data(),
                                       static_cast<int32_t>(tensors_.size()), tsfn_ ? &LoadWorker::OnProgress : nullptr,
                                       this, &state_->model, err, kErrLen);
    state_->message = err;
  }
  void OnOK() override {
    if (tsfn_) tsfn_.Release();
    else state_->Settle(Env());
  }
  void OnError(const Napi::Error &e) override {
    state_->status = RUNNER_ERR_INVALID_ARGUMENT;
    state_->message = e.Message();
    if (tsfn_) tsfn_.Release();
    else state_->Settle(Env());
  }

 private:
  static int OnProgress(void *user, uint64_t done, uint64_t total) {
    auto *self = static_cast<LoadWorker *>(user);
    auto *data = new ProgressData{done, total};
    napi_status s = self->tsfn_.NonBlockingCall(data, [](Napi::Env env, Napi::Function fn, ProgressData *d) {
      // A throwing progress callback must not reach native code: swallow it here.
      try {
        fn.Call({Napi::Number::New(env, static_cast<double>(d->done)), Napi::Number::New(env, static_cast<double>(d->total))});
      } catch (...) {
      }
      delete d;
    });
    if (s != napi_ok) delete data;
    return 0;
  }

  std::shared_ptr<LoadState> state_;
  runner_model_config cfg_;
  std::vector<uint8_t> attn_removed_, ffn_removed_, swa_layers_;
  std::vector<std::string> paths_;
  std::vector<runner_tensor_desc> tensors_;
  Napi::ThreadSafeFunction tsfn_;
};

// modelLoad(config, paths, tensors, onProgress?) -> Promise<model handle>
Napi::Value ModelLoad(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject() || !info[1].IsArray() || !info[2].IsArray())
    throw Napi::TypeError::New(env, "modelLoad(config, paths, tensors, onProgress?)");
  Napi::Object c = info[0].As<Napi::Object>();
  runner_model_config cfg{};
  cfg.n_vocab = GetInt(c, "nVocab");
  cfg.n_embd = GetInt(c, "nEmbd");
  cfg.n_layer = GetInt(c, "nLayer");
  cfg.n_head = GetInt(c, "nHead");
  cfg.n_head_kv = GetInt(c, "nHeadKv");
  cfg.head_dim = GetInt(c, "headDim");
  cfg.n_ff = GetInt(c, "nFf");
  cfg.n_ctx_train = GetInt(c, "nCtxTrain");
  cfg.n_rot = GetInt(c, "nRot");
  cfg.rope_type = GetInt(c, "ropeType");
  cfg.rope_freq_base = static_cast<float>(GetDouble(c, "ropeFreqBase"));
  cfg.rope_freq_scale = static_cast<float>(GetDouble(c, "ropeFreqScale"));
  cfg.norm_eps = static_cast<float>(GetDouble(c, "normEps"));
  auto optional = [&](const char *key) { return c.Get(key).IsUndefined() ? 0.0f : static_cast<float>(GetDouble(c, key)); };
  cfg.embedding_scale = optional("embeddingScale");
  cfg.residual_scale = optional("residualScale");
  cfg.attention_scale = optional("attentionScale");
  cfg.logit_scale = optional("logitScale");
  cfg.query_scale = optional("queryScale");
  cfg.attn_softcap = optional("attnSoftcap");
  cfg.final_softcap = optional("finalSoftcap");
  cfg.rope_freq_base_swa = optional("ropeFreqBaseSwa");
  cfg.rope_freq_scale_swa = optional("ropeFreqScaleSwa");
  cfg.rope_attn_factor = optional("ropeAttnFactor");
  auto optionalInt = [&](const char *key) { return c.Get(key).IsUndefined() ? 0 : GetInt(c, key); };
  cfg.ffn_act = optionalInt("ffnAct");
  cfg.n_swa = optionalInt("nSwa");
  cfg.n_expert = optionalInt("nExpert");
  cfg.n_expert_used = optionalInt("nExpertUsed");
  cfg.n_ff_exp = optionalInt("nFfExp");
  cfg.n_ctx_orig = optionalInt("nCtxOrig");
  // Per-block removal flags, copied (the config's pointers must outlive only the load call).
  auto flags = [&](const char *key) {
    std::vector<uint8_t> out;
    Napi::Value v = c.Get(key);
    if (v.IsUndefined()) return out;
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      throw Napi::TypeError::New(env, std::string(key) + " must be a Uint8Array");
    Napi::Uint8Array a = v.As<Napi::Uint8Array>();
    if (a.ElementLength() != static_cast<size_t>(cfg.n_layer > 0 ? cfg.n_layer : 0))
      throw Napi::RangeError::New(env, std::string(key) + " must hold one flag per layer (" + std::to_string(cfg.n_layer) + ")");
    out.assign(a.Data(), a.Data() + a.ElementLength());
    return out;
  };
  std::vector<uint8_t> attn_removed = flags("attnRemoved"), ffn_removed = flags("ffnRemoved"), swa_layers = flags("swaLayers");

  std::vector<std::string> paths;
  Napi::Array pa = info[1].As<Napi::Array>();
  for (uint32_t i = 0; i < pa.Length(); i++) {
    Napi::Value v = pa.Get(i);
    if (!v.IsString()) throw Napi::TypeError::New(env, "paths[" + std::to_string(i) + "] must be a string");
    paths.push_back(v.As<Napi::String>().Utf8Value());
  }
  std::vector<runner_tensor_desc> tensors;
  Napi::Array ta = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < ta.Length(); i++) {
    Napi::Value v = ta.Get(i);
    if (!v.IsObject()) throw Napi::TypeError::New(env, "tensors[" + std::to_string(i) + "] must be an object");
    Napi::Object o = v.As<Napi::Object>();
    runner_tensor_desc d{};
    d.role = GetInt(o, "role");
    d.layer = GetInt(o, "layer");
    d.type = GetInt(o, "type");
    d.file = GetInt(o, "file");
    d.offset = GetU64(o, "offset");
    d.size = GetU64(o, "size");
    d.expert = o.Get("expert").IsUndefined() ? -1 : GetInt(o, "expert");
    Napi::Value ne = o.Get("ne");
    if (!ne.IsArray()) throw Napi::TypeError::New(env, "tensors[" + std::to_string(i) + "].ne must be an array");
    Napi::Array nea = ne.As<Napi::Array>();
    if (nea.Length() < 1 || nea.Length() > 4) throw Napi::RangeError::New(env, "tensors[" + std::to_string(i) + "].ne must have 1 to 4 dimensions");
    d.n_dims = static_cast<int32_t>(nea.Length());
    for (uint32_t k = 0; k < nea.Length(); k++) {
      Napi::Value x = nea.Get(k);
      if (!x.IsNumber()) throw Napi::TypeError::New(env, "tensors[" + std::to_string(i) + "].ne must hold numbers");
      d.ne[k] = static_cast<int64_t>(x.As<Napi::Number>().Int64Value());
    }
    for (uint32_t k = nea.Length(); k < 4; k++) d.ne[k] = 1;
    tensors.push_back(d);
  }
  Napi::Function progress;
  if (info.Length() > 3 && info[3].IsFunction()) progress = info[3].As<Napi::Function>();
  auto *w = new LoadWorker(env, cfg, std::move(attn_removed), std::move(ffn_removed), std::move(swa_layers), std::move(paths),
                           std::move(tensors), progress);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

Napi::Value ModelFree(const Napi::CallbackInfo &info) {
  auto &sp = Slot<ModelHandle>(info[0], "model");
  if (sp) sp->disposed = true;
  sp.reset();  // contexts still holding it keep it alive until they go
  return info.Env().Undefined();
}

// ---- contexts ----------------------------------------------------------------------------------

class ContextWorker : public Napi::AsyncWorker {
 public:
  ContextWorker(Napi::Env env, ModelRef model, runner_context_params params)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), model_(std::move(model)), params_(params) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    char err[kErrLen] = {0};
    status_ = runner_context_create(model_->model, &params_, &ctx_, err, kErrLen);
    message_ = err;
  }
  void OnOK() override {
    if (status_ != RUNNER_OK) {
      deferred_.Reject(EngineError(Env(), status_, message_).Value());
      return;
    }
    auto h = std::make_shared<ContextHandle>();
    h->ctx = ctx_;
    h->model = model_;
    deferred_.Resolve(Wrap(Env(), h));
  }
  void OnError(const Napi::Error &e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  ModelRef model_;
  runner_context_params params_;
  runner_context *ctx_ = nullptr;
  runner_status status_ = RUNNER_OK;
  std::string message_;
};

// contextCreate(model, {nCtx, nBatch, threads, kvType}) -> Promise<context handle>
Napi::Value ContextCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  ModelRef m = Unwrap<ModelHandle>(info[0], "model");
  if (!info[1].IsObject()) throw Napi::TypeError::New(env, "contextCreate(model, params)");
  Napi::Object o = info[1].As<Napi::Object>();
  runner_context_params p{};
  p.n_ctx = GetInt(o, "nCtx");
  p.n_batch = GetInt(o, "nBatch");
  p.n_threads = GetInt(o, "threads");
  p.kv_type = GetInt(o, "kvType");
  auto *w = new ContextWorker(env, m, p);
  Napi::Promise pr = w->Promise();
  w->Queue();
  return pr;
}

Napi::Value ContextFree(const Napi::CallbackInfo &info) {
  auto &sp = Slot<ContextHandle>(info[0], "context");
  if (sp) sp->disposed = true;
  sp.reset();  // a running worker holds its own reference; the context is freed when it ends
  return info.Env().Undefined();
}

ContextRef Acquire(const Napi::Value &v) {
  ContextRef c = Unwrap<ContextHandle>(v, "context");
  bool expected = false;
  if (!c->busy.compare_exchange_strong(expected, true))
    throw Napi::Error::New(v.Env(), "context is busy with another decode or generate call");
  return c;
}

// ---- decode ------------------------------------------------------------------------------------

class DecodeWorker : public Napi::AsyncWorker {
 public:
  DecodeWorker(Napi::Env env, ContextRef ctx, std::vector<int32_t> tokens, int32_t pos, int32_t mode, Napi::Float32Array logits,
               Napi::Int32Array flags)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), ctx_(std::move(ctx)), tokens_(std::move(tokens)),
        pos_(pos), mode_(mode) {
    if (!logits.IsEmpty()) {
      logits_ref_ = Napi::Persistent(logits);
      logits_ = logits.Data();
    }
    if (!flags.IsEmpty()) {
      flags_ref_ = Napi::Persistent(flags);
      abort_ = flags.Data();
    }
  }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    char err[kErrLen] = {0};
    status_ = runner_decode(ctx_->ctx, tokens_.data(), static_cast<int32_t>(tokens_.size()), pos_, mode_, logits_, abort_, err, kErrLen);
    message_ = err;
  }
  void OnOK() override {
    ctx_->busy = false;
    if (status_ != RUNNER_OK) deferred_.Reject(EngineError(Env(), status_, message_).Value());
    else deferred_.Resolve(Env().Undefined());
  }
  void OnError(const Napi::Error &e) override {
    ctx_->busy = false;
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  ContextRef ctx_;
  std::vector<int32_t> tokens_;
  int32_t pos_, mode_;
  Napi::Reference<Napi::Float32Array> logits_ref_;
  Napi::Reference<Napi::Int32Array> flags_ref_;
  float *logits_ = nullptr;
  const volatile int32_t *abort_ = nullptr;
  runner_status status_ = RUNNER_OK;
  std::string message_;
};

std::vector<int32_t> TokensFrom(const Napi::Value &v, const char *what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(v.Env(), std::string(what) + " must be an Int32Array");
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  return std::vector<int32_t>(a.Data(), a.Data() + a.ElementLength());
}

Napi::Int32Array FlagsFrom(const Napi::Value &v) {
  if (v.IsUndefined() || v.IsNull()) return Napi::Int32Array();
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array || v.As<Napi::Int32Array>().ElementLength() < 2)
    throw Napi::TypeError::New(v.Env(), "flags must be an Int32Array of length 2 ([abort, stop])");
  return v.As<Napi::Int32Array>();
}

// decode(context, tokens: Int32Array, pos, logitsMode, logitsOut?: Float32Array, flags?: Int32Array) -> Promise<void>
Napi::Value Decode(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::vector<int32_t> tokens = TokensFrom(info[1], "tokens");
  const int32_t pos = IntArg(info[2], "pos"), mode = IntArg(info[3], "logitsMode");
  Napi::Float32Array logits;
  if (info.Length() > 4 && info[4].IsTypedArray()) {
    if (info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) throw Napi::TypeError::New(env, "logits must be a Float32Array");
    logits = info[4].As<Napi::Float32Array>();
  }
  Napi::Int32Array flags = info.Length() > 5 ? FlagsFrom(info[5]) : Napi::Int32Array();
  ContextRef c = Acquire(info[0]);
  const size_t n_vocab = static_cast<size_t>(runner_model_n_vocab(c->model->model));
  const size_t need = mode == RUNNER_LOGITS_ALL ? n_vocab * tokens.size() : mode == RUNNER_LOGITS_LAST ? n_vocab : 0;
  if (!logits.IsEmpty() && logits.ElementLength() < need) {
    c->busy = false;
    throw Napi::RangeError::New(env, "logits holds " + std::to_string(logits.ElementLength()) + " floats, " + std::to_string(need) + " needed");
  }
  auto *w = new DecodeWorker(env, c, std::move(tokens), pos, mode, logits, flags);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

Napi::Value KvTruncate(const Napi::CallbackInfo &info) {
  const int32_t n = IntArg(info[1], "nKeep");
  ContextRef c = Acquire(info[0]);
  runner_status st = runner_kv_truncate(c->ctx, n);
  c->busy = false;
  if (st != RUNNER_OK) throw EngineError(info.Env(), st, "kvTruncate: " + std::to_string(n) + " is outside [0, n_past]");
  return info.Env().Undefined();
}

Napi::Value KvBytes(const Napi::CallbackInfo &info) {
  ContextRef c = Unwrap<ContextHandle>(info[0], "context");
  return Napi::Number::New(info.Env(), static_cast<double>(runner_context_kv_bytes(c->ctx)));
}

Napi::Value NPast(const Napi::CallbackInfo &info) {
  ContextRef c = Unwrap<ContextHandle>(info[0], "context");
  // A running worker writes n_past: reading it then would race, and the answer would be stale.
  if (c->busy) throw Napi::Error::New(info.Env(), "context is busy with another decode or generate call");
  return Napi::Number::New(info.Env(), runner_context_n_past(c->ctx));
}

// ---- generate ----------------------------------------------------------------------------------

struct TokenEvent {
  runner_sample_result r;
};

struct GenerateState {
  Napi::Promise::Deferred deferred;
  runner_status status = RUNNER_OK;
  std::string message;
  runner_generate_stats stats{};
  explicit GenerateState(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
};

class GenerateWorker : public Napi::AsyncWorker {
 public:
  GenerateWorker(Napi::Env env, ContextRef ctx, std::shared_ptr<GenerateState> state, Napi::ThreadSafeFunction tsfn,
                 std::vector<int32_t> prompt, std::vector<int32_t> history, std::vector<int32_t> eog, int32_t pos,
                 int32_t max_tokens, SamplerParams sp, Napi::Int32Array flags)
      : Napi::AsyncWorker(env), ctx_(std::move(ctx)), state_(std::move(state)), tsfn_(tsfn), prompt_(std::move(prompt)),
        history_(std::move(history)), eog_(std::move(eog)), pos_(pos), max_tokens_(max_tokens), sp_(std::move(sp)) {
    if (!flags.IsEmpty()) {
      flags_ref_ = Napi::Persistent(flags);
      flags_ = flags.Data();
    }
  }

  void Execute() override {
    sp_.exempt = eog_;  // penalties never touch end-of-generation tokens
    const runner_sampler_params &sampling = sp_.Bind();
    runner_generate_params p{};
    p.prompt = prompt_.data();
    p.n_prompt = static_cast<int32_t>(prompt_.size());
    p.pos = pos_;
    p.history = history_.data();
    p.n_history = static_cast<int32_t>(history_.size());
    p.max_tokens = max_tokens_;
    p.eog_tokens = eog_.data();
    p.n_eog = static_cast<int32_t>(eog_.size());
    p.sampling = &sampling;
    char err[kErrLen] = {0};
    state_->status = runner_generate(ctx_->ctx, &p, &GenerateWorker::OnToken, this, flags_, &state_->stats, err, kErrLen);
    state_->message = err;
  }
  void OnOK() override {
    ctx_->busy = false;
    tsfn_.Release();  // the finalizer settles the promise once every queued token has been delivered
  }
  void OnError(const Napi::Error &e) override {
    ctx_->busy = false;
    state_->status = RUNNER_ERR_INVALID_ARGUMENT;
    state_->message = e.Message();
    tsfn_.Release();
  }

 private:
  static int OnToken(void *user, const runner_sample_result *r) {
    auto *self = static_cast<GenerateWorker *>(user);
    auto *ev = new TokenEvent{*r};
    napi_status s = self->tsfn_.NonBlockingCall(ev, [](Napi::Env env, Napi::Function fn, TokenEvent *e) {
      Napi::Value top_ids = env.Null(), top_lp = env.Null();
      if (e->r.n_top > 0) {
        Napi::Int32Array ids = Napi::Int32Array::New(env, static_cast<size_t>(e->r.n_top));
        Napi::Float32Array lps = Napi::Float32Array::New(env, static_cast<size_t>(e->r.n_top));
        for (int32_t i = 0; i < e->r.n_top; i++) {
          ids[i] = e->r.top_tokens[i];
          lps[i] = e->r.top_logprobs[i];
        }
        top_ids = ids;
        top_lp = lps;
      }
      try {
        fn.Call({Napi::Number::New(env, e->r.token), Napi::Number::New(env, e->r.logprob), top_ids, top_lp});
      } catch (...) {
        // A throwing callback must never unwind into native code; the JS wrapper reports it.
      }
      delete e;
    });
    if (s != napi_ok) delete ev;
    return self->flags_ && self->flags_[1] != 0;
  }

  ContextRef ctx_;
  std::shared_ptr<GenerateState> state_;
  Napi::ThreadSafeFunction tsfn_;
  std::vector<int32_t> prompt_, history_, eog_;
  int32_t pos_, max_tokens_;
  SamplerParams sp_;
  Napi::Reference<Napi::Int32Array> flags_ref_;
  volatile int32_t *flags_ = nullptr;
};

Napi::Object StatsToJs(Napi::Env env, const runner_generate_stats &s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("nPrompt", s.n_prompt);
  o.Set("nGenerated", s.n_generated);
  o.Set("finish", s.finish);
  o.Set("eogToken", s.eog_token);
  o.Set("promptMs", s.prompt_ms);
  o.Set("decodeMs", s.decode_ms);
  return o;
}

// generate(context, {prompt, pos, history, maxTokens, eogTokens, sampling: {...}}, onToken, flags) -> Promise<stats>
Napi::Value Generate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[1].IsObject() || !info[2].IsFunction()) throw Napi::TypeError::New(env, "generate(context, params, onToken, flags?)");
  Napi::Object o = info[1].As<Napi::Object>();
  std::vector<int32_t> prompt = TokensFrom(o.Get("prompt"), "prompt");
  std::vector<int32_t> history = o.Has("history") && !o.Get("history").IsUndefined() ? TokensFrom(o.Get("history"), "history") : std::vector<int32_t>();
  std::vector<int32_t> eog = TokensFrom(o.Get("eogTokens"), "eogTokens");
  int32_t pos = GetInt(o, "pos"), max_tokens = GetInt(o, "maxTokens");
  if (!o.Get("sampling").IsObject()) throw Napi::TypeError::New(env, "sampling must be an object");
  SamplerParams sp = ReadSamplerParams(env, o.Get("sampling").As<Napi::Object>());
  Napi::Int32Array flags = info.Length() > 3 ? FlagsFrom(info[3]) : Napi::Int32Array();
  ContextRef c = Acquire(info[0]);
  try {
    auto state = std::make_shared<GenerateState>(env);
    Napi::ThreadSafeFunction tsfn = Napi::ThreadSafeFunction::New(
        env, info[2].As<Napi::Function>(), "runner.generate.tokens", 0, 1, [state](Napi::Env env) {
          if (state->status != RUNNER_OK) state->deferred.Reject(EngineError(env, state->status, state->message).Value());
          else state->deferred.Resolve(StatsToJs(env, state->stats));
        });
    auto *w = new GenerateWorker(env, c, state, tsfn, std::move(prompt), std::move(history), std::move(eog), pos, max_tokens,
                                 std::move(sp), flags);
    w->Queue();
    return state->deferred.Promise();
  } catch (...) {
    c->busy = false;  // never leave the context stuck "busy" when starting failed
    throw;
  }
}

// tensorRoles() -> the role names in id order, for the test that src/lib/arch agrees.
Napi::Value TensorRoles(const Napi::CallbackInfo &info) {
  Napi::Array out = Napi::Array::New(info.Env());
  for (int32_t r = 0; runner_tensor_role_name(r) != nullptr; r++) out.Set(static_cast<uint32_t>(r), runner_tensor_role_name(r));
  return out;
}

}  // namespace

void RegisterEngineBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("modelLoad", Napi::Function::New(env, ModelLoad, "modelLoad"));
  exports.Set("modelFree", Napi::Function::New(env, ModelFree, "modelFree"));
  exports.Set("contextCreate", Napi::Function::New(env, ContextCreate, "contextCreate"));
  exports.Set("contextFree", Napi::Function::New(env, ContextFree, "contextFree"));
  exports.Set("decode", Napi::Function::New(env, Decode, "decode"));
  exports.Set("kvTruncate", Napi::Function::New(env, KvTruncate, "kvTruncate"));
  exports.Set("nPast", Napi::Function::New(env, NPast, "nPast"));
  exports.Set("kvBytes", Napi::Function::New(env, KvBytes, "kvBytes"));
  exports.Set("generate", Napi::Function::New(env, Generate, "generate"));
  exports.Set("tensorRoles", Napi::Function::New(env, TensorRoles, "tensorRoles"));
}

}  // namespace runner_addon

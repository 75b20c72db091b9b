// The engine's JavaScript face: models, contexts, decode and generate. Long calls run on libuv
// worker threads (Napi::AsyncWorker) and resolve Promises; generated tokens stream to JavaScript
// through a ThreadSafeFunction, never blocking the generating thread. No arithmetic here.
//
// Errors: every rejection and every thrown error carries a `code` from runner.h's status table
// (runner_status_code): the engine's own statuses, ENGINE_INVALID_ARGUMENT for an argument this file
// refuses (naming it), ENGINE_BUSY and ENGINE_DISPOSED for handles. A C++ exception inside a worker
// is caught there (GuardExecute): out of memory rejects as ENGINE_NO_MEMORY, anything else as
// ENGINE_INTERNAL.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "bindings.h"

namespace runner_addon {
namespace {

constexpr int kErrLen = 512;

// Handles own their native object; `busy` refuses a second call while a worker uses it, and a
// dispose during a call is deferred to the call's end.
struct ModelHandle {
  runner_model *model = nullptr;
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

// A decode group lives while its JavaScript handle or any generation using it does.
struct GroupHandle {
  runner_group *group = nullptr;
  std::shared_ptr<ModelHandle> model;
  bool disposed = false;
  ~GroupHandle() { runner_group_free(group); }
};

using ModelRef = std::shared_ptr<ModelHandle>;
using ContextRef = std::shared_ptr<ContextHandle>;
using GroupRef = std::shared_ptr<GroupHandle>;

// A draft source of speculative decoding. A draft model's context is the draft's alone while it
// lives: it stays marked busy (its cache holds what the draft evaluated), and is released on free.
struct DraftHandle {
  runner_draft *draft = nullptr;
  ContextRef ctx;
  std::atomic<bool> busy{false};
  bool disposed = false;
  ~DraftHandle() {
    runner_draft_free(draft);
    if (ctx) ctx->busy = false;
  }
};
using DraftRef = std::shared_ptr<DraftHandle>;

// Type tags: a model handle passed where a context is expected (or any other External) is refused
// by name instead of being reinterpreted.
template <typename T> struct HandleTag;
template <> struct HandleTag<ModelHandle> { static constexpr napi_type_tag tag = {0x52554e4e45524d4fULL, 0x44454c48414e444cULL}; };
template <> struct HandleTag<ContextHandle> { static constexpr napi_type_tag tag = {0x52554e4e4552434fULL, 0x4e5445585448444cULL}; };
template <> struct HandleTag<GroupHandle> { static constexpr napi_type_tag tag = {0x52554e4e45524752ULL, 0x4f55504841444c45ULL}; };
template <> struct HandleTag<DraftHandle> { static constexpr napi_type_tag tag = {0x52554e4e45524452ULL, 0x4146544841444c45ULL}; };

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
    ThrowInvalid(v.Env(), Kind::kTypeError, std::string(what) + " must be a " + what + " handle from the engine");
  return *v.As<Napi::External<std::shared_ptr<T>>>().Data();
}

template <typename T>
std::shared_ptr<T> Unwrap(const Napi::Value &v, const char *what) {
  auto sp = Slot<T>(v, what);
  if (!sp || sp->disposed) Throw(v.Env(), Kind::kError, runner_status_code(RUNNER_ERR_DISPOSED), std::string(what) + " has been disposed");
  return sp;
}

[[noreturn]] void ThrowBusy(const Napi::Env &env) {
  Throw(env, Kind::kError, runner_status_code(RUNNER_ERR_BUSY), "context is busy with another decode or generate call");
}

// A property of an argument object, named in errors as `where.key`.
int32_t IntProp(const Napi::Object &o, const char *key, const std::string &where) {
  return Int32Arg(o.Get(key), where + "." + key);
}

uint64_t U64Prop(const Napi::Object &o, const char *key, const std::string &where) {
  Napi::Value v = o.Get(key);
  const std::string what = where + "." + key;
  if (v.IsBigInt()) {
    bool lossless = false;
    uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) ThrowInvalid(o.Env(), Kind::kRangeError, what + " does not fit 64 bits");
    return x;
  }
  const double d = NumberArg(v, what);
  if (!(d >= 0 && d <= 9007199254740991.0) || d != static_cast<double>(static_cast<uint64_t>(d)))
    ThrowInvalid(o.Env(), Kind::kRangeError, what + " must be a non-negative integer, got " + NumberText(d));
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
      deferred.Reject(StatusError(env, status, message).Value());
      return;
    }
    auto h = std::make_shared<ModelHandle>();
    h->model = model;
    model = nullptr;
    deferred.Resolve(Wrap(env, h));
  }
  ~LoadState() { runner_model_free(model); }
};

Napi::Int32Array FlagsFrom(const Napi::Value &v);

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, ConfigArg cfg, std::vector<std::string> paths, std::vector<runner_tensor_desc> tensors, Napi::Function progress,
             Napi::Int32Array flags)
      : Napi::AsyncWorker(env), state_(std::make_shared<LoadState>(env)), cfg_(std::move(cfg)), paths_(std::move(paths)),
        tensors_(std::move(tensors)) {
    if (!flags.IsEmpty()) {
      flags_ref_ = Napi::Persistent(flags);
      abort_ = flags.Data();
    }
    if (!progress.IsEmpty()) {
      std::shared_ptr<LoadState> state = state_;
      tsfn_ = Napi::ThreadSafeFunction::New(env, progress, "runner.modelLoad.progress", 0, 1,
                                            [state](Napi::Env env) { state->Settle(env); });
    }
  }
  Napi::Promise Promise() { return state_->deferred.Promise(); }

  void Execute() override {
    state_->status = GuardExecute(state_->message, [&] {
      std::vector<const char *> cpaths;
      for (auto &p : paths_) cpaths.push_back(p.c_str());
      char err[kErrLen] = {0};
      const runner_status st = runner_model_load(&cfg_.Bind(), cpaths.data(), static_cast<int32_t>(cpaths.size()), tensors_.data(),
                                                 static_cast<int32_t>(tensors_.size()), tsfn_ || abort_ ? &LoadWorker::OnProgress : nullptr, this,
                                                 &state_->model, err, kErrLen);
      state_->message = err;
      return st;
    });
  }
  void OnOK() override {
    if (tsfn_) tsfn_.Release();
    else state_->Settle(Env());
  }
  // Only reached if node-addon-api itself reports an error: Execute catches everything.
  void OnError(const Napi::Error &e) override {
    state_->status = RUNNER_ERR_INTERNAL;
    state_->message = e.Message();
    if (tsfn_) tsfn_.Release();
    else state_->Settle(Env());
  }

 private:
  // Between chunks of the prefault: report progress (if asked) and cancel when the abort flag is raised
  // (Ctrl+C while a large model loads: RUNNER_ERR_ABORTED, "model load cancelled").
  static int OnProgress(void *user, uint64_t done, uint64_t total) {
    auto *self = static_cast<LoadWorker *>(user);
    if (self->tsfn_) {
      auto *data = new (std::nothrow) ProgressData{done, total};
      if (data) {  // else a report is dropped, the load goes on
        napi_status s = self->tsfn_.NonBlockingCall(data, [](Napi::Env env, Napi::Function fn, ProgressData *d) {
          std::unique_ptr<ProgressData> owned(d);
          // A throwing progress callback must not reach native code: swallow it here.
          try {
            fn.Call({Napi::Number::New(env, static_cast<double>(owned->done)), Napi::Number::New(env, static_cast<double>(owned->total))});
          } catch (...) {
          }
        });
        if (s != napi_ok) delete data;
      }
    }
    return self->abort_ && self->abort_[0] != 0;
  }

  std::shared_ptr<LoadState> state_;
  ConfigArg cfg_;
  std::vector<std::string> paths_;
  std::vector<runner_tensor_desc> tensors_;
  Napi::ThreadSafeFunction tsfn_;
  Napi::Reference<Napi::Int32Array> flags_ref_;
  const volatile int32_t *abort_ = nullptr;
};

// modelLoad(config, paths, tensors, onProgress?, flags?) -> Promise<model handle>; flags[0] cancels the load.
Napi::Value ModelLoad(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject() || !info[1].IsArray() || !info[2].IsArray())
    ThrowInvalid(env, Kind::kTypeError, "modelLoad(config, paths, tensors, onProgress?, flags?)");
  ConfigArg cfg = ReadConfig(env, info[0].As<Napi::Object>());

  std::vector<std::string> paths;
  Napi::Array pa = info[1].As<Napi::Array>();
  for (uint32_t i = 0; i < pa.Length(); i++) {
    Napi::Value v = pa.Get(i);
    if (!v.IsString()) ThrowInvalid(env, Kind::kTypeError, "paths[" + std::to_string(i) + "] must be a string");
    paths.push_back(v.As<Napi::String>().Utf8Value());
  }
  std::vector<runner_tensor_desc> tensors;
  Napi::Array ta = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < ta.Length(); i++) {
    const std::string where = "tensors[" + std::to_string(i) + "]";
    Napi::Value v = ta.Get(i);
    if (!v.IsObject()) ThrowInvalid(env, Kind::kTypeError, where + " must be an object");
    Napi::Object o = v.As<Napi::Object>();
    runner_tensor_desc d{};
    d.role = IntProp(o, "role", where);
    d.layer = IntProp(o, "layer", where);
    d.type = IntProp(o, "type", where);
    d.file = IntProp(o, "file", where);
    d.offset = U64Prop(o, "offset", where);
    d.size = U64Prop(o, "size", where);
    d.expert = o.Get("expert").IsUndefined() ? -1 : IntProp(o, "expert", where);
    Napi::Value ne = o.Get("ne");
    if (!ne.IsArray()) ThrowInvalid(env, Kind::kTypeError, where + ".ne must be an array");
    Napi::Array nea = ne.As<Napi::Array>();
    if (nea.Length() < 1 || nea.Length() > 4) ThrowInvalid(env, Kind::kRangeError, where + ".ne must have 1 to 4 dimensions");
    d.n_dims = static_cast<int32_t>(nea.Length());
    for (uint32_t k = 0; k < nea.Length(); k++) {
      Napi::Value x = nea.Get(k);
      if (!x.IsNumber()) ThrowInvalid(env, Kind::kTypeError, where + ".ne must hold numbers");
      d.ne[k] = static_cast<int64_t>(x.As<Napi::Number>().Int64Value());
    }
    for (uint32_t k = nea.Length(); k < 4; k++) d.ne[k] = 1;
    tensors.push_back(d);
  }
  Napi::Function progress;
  if (info.Length() > 3 && info[3].IsFunction()) progress = info[3].As<Napi::Function>();
  Napi::Int32Array flags = info.Length() > 4 ? FlagsFrom(info[4]) : Napi::Int32Array();
  auto *w = new LoadWorker(env, std::move(cfg), std::move(paths), std::move(tensors), progress, flags);
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

// Two numbers `where.key` as an int64 pair (a LoRA tensor's ggml shape).
void NePair(const Napi::Object &o, const char *key, const std::string &where, int64_t *ne) {
  Napi::Value v = o.Get(key);
  const std::string what = where + "." + key;
  if (!v.IsArray() || v.As<Napi::Array>().Length() != 2) ThrowInvalid(o.Env(), Kind::kTypeError, what + " must be an array of 2 numbers");
  for (uint32_t k = 0; k < 2; k++) ne[k] = static_cast<int64_t>(U64Prop(v.As<Napi::Array>(), std::to_string(k).c_str(), what));
}

// modelAddLora(model, path, pairs, alpha, scale): map an adapter file and attach its pairs
// (runner_model_add_lora). Synchronous: mapping and checking touch no weight pages.
Napi::Value ModelAddLora(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  ModelRef m = Unwrap<ModelHandle>(info[0], "model");
  if (!info[1].IsString() || !info[2].IsArray())
    ThrowInvalid(env, Kind::kTypeError, "modelAddLora(model, path, pairs, alpha, scale): path must be a string and pairs an array");
  const std::string path = info[1].As<Napi::String>().Utf8Value();
  std::vector<runner_lora_pair_desc> pairs;
  Napi::Array pa = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < pa.Length(); i++) {
    const std::string where = "pairs[" + std::to_string(i) + "]";
    Napi::Value v = pa.Get(i);
    if (!v.IsObject()) ThrowInvalid(env, Kind::kTypeError, where + " must be an object");
    Napi::Object o = v.As<Napi::Object>();
    runner_lora_pair_desc d{};
    d.role = IntProp(o, "role", where);
    d.layer = IntProp(o, "layer", where);
    d.a_type = IntProp(o, "aType", where);
    d.b_type = IntProp(o, "bType", where);
    NePair(o, "aNe", where, d.a_ne);
    NePair(o, "bNe", where, d.b_ne);
    d.a_offset = U64Prop(o, "aOffset", where);
    d.a_size = U64Prop(o, "aSize", where);
    d.b_offset = U64Prop(o, "bOffset", where);
    d.b_size = U64Prop(o, "bSize", where);
    pairs.push_back(d);
  }
  const float alpha = static_cast<float>(NumberArg(info[3], "alpha"));
  const float scale = static_cast<float>(NumberArg(info[4], "scale"));
  char err[kErrLen] = {0};
  const runner_status st =
      runner_model_add_lora(m->model, path.c_str(), pairs.data(), static_cast<int32_t>(pairs.size()), alpha, scale, err, kErrLen);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  return env.Undefined();
}

// ---- contexts ----------------------------------------------------------------------------------

class ContextWorker : public Napi::AsyncWorker {
 public:
  ContextWorker(Napi::Env env, ModelRef model, runner_context_params params)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), model_(std::move(model)), params_(params) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    status_ = GuardExecute(message_, [&] {
      char err[kErrLen] = {0};
      const runner_status st = runner_context_create(model_->model, &params_, &ctx_, err, kErrLen);
      message_ = err;
      return st;
    });
  }
  void OnOK() override {
    if (status_ != RUNNER_OK) {
      deferred_.Reject(StatusError(Env(), status_, message_).Value());
      return;
    }
    auto h = std::make_shared<ContextHandle>();
    h->ctx = ctx_;
    h->model = model_;
    deferred_.Resolve(Wrap(Env(), h));
  }
  void OnError(const Napi::Error &e) override { deferred_.Reject(StatusError(Env(), RUNNER_ERR_INTERNAL, e.Message()).Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  ModelRef model_;
  runner_context_params params_;
  runner_context *ctx_ = nullptr;
  runner_status status_ = RUNNER_OK;
  std::string message_;
};

// contextCreate(model, {nCtx, nBatch, threads, kvType, blocks?}) -> Promise<context handle>
Napi::Value ContextCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  ModelRef m = Unwrap<ModelHandle>(info[0], "model");
  if (!info[1].IsObject()) ThrowInvalid(env, Kind::kTypeError, "contextCreate(model, params): params must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  runner_context_params p{};
  p.n_ctx = IntProp(o, "nCtx", "params");
  p.n_batch = IntProp(o, "nBatch", "params");
  p.n_threads = IntProp(o, "threads", "params");
  p.kv_type = IntProp(o, "kvType", "params");
  // Optional: an MTP draft's context runs only the NextN block (runner_context_blocks).
  p.blocks = o.Has("blocks") && !o.Get("blocks").IsUndefined() ? IntProp(o, "blocks", "params") : RUNNER_CONTEXT_MODEL;
  p.swa_full = o.Get("swaFull").IsUndefined() ? 0 : IntProp(o, "swaFull", "params");
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
  if (!c->busy.compare_exchange_strong(expected, true)) ThrowBusy(v.Env());
  return c;
}

// A context no worker is using (reads would race with one that is).
ContextRef Idle(const Napi::Value &v) {
  ContextRef c = Unwrap<ContextHandle>(v, "context");
  if (c->busy) ThrowBusy(v.Env());
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
    status_ = GuardExecute(message_, [&] {
      char err[kErrLen] = {0};
      const runner_status st =
          runner_decode(ctx_->ctx, tokens_.data(), static_cast<int32_t>(tokens_.size()), pos_, mode_, logits_, abort_, err, kErrLen);
      message_ = err;
      return st;
    });
  }
  void OnOK() override {
    ctx_->busy = false;
    if (status_ != RUNNER_OK) deferred_.Reject(StatusError(Env(), status_, message_).Value());
    else deferred_.Resolve(Env().Undefined());
  }
  void OnError(const Napi::Error &e) override {
    ctx_->busy = false;
    deferred_.Reject(StatusError(Env(), RUNNER_ERR_INTERNAL, e.Message()).Value());
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
    ThrowInvalid(v.Env(), Kind::kTypeError, std::string(what) + " must be an Int32Array");
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  return std::vector<int32_t>(a.Data(), a.Data() + a.ElementLength());
}

Napi::Int32Array FlagsFrom(const Napi::Value &v) {
  if (v.IsUndefined() || v.IsNull()) return Napi::Int32Array();
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array || v.As<Napi::Int32Array>().ElementLength() < 2)
    ThrowInvalid(v.Env(), Kind::kTypeError, "flags must be an Int32Array of length 2 ([abort, stop])");
  return v.As<Napi::Int32Array>();
}

// decode(context, tokens: Int32Array, pos, logitsMode, logitsOut?: Float32Array, flags?: Int32Array) -> Promise<void>
// logitsMode 3 (EMBD) writes n * n_embd floats: each token's output-normed hidden state.
Napi::Value Decode(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::vector<int32_t> tokens = TokensFrom(info[1], "tokens");
  const int32_t pos = Int32Arg(info[2], "pos"), mode = Int32Arg(info[3], "logitsMode");
  Napi::Float32Array logits;
  if (info.Length() > 4 && info[4].IsTypedArray()) {
    if (info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) ThrowInvalid(env, Kind::kTypeError, "logits must be a Float32Array");
    logits = info[4].As<Napi::Float32Array>();
  }
  Napi::Int32Array flags = info.Length() > 5 ? FlagsFrom(info[5]) : Napi::Int32Array();
  ContextRef c = Acquire(info[0]);
  const size_t n_vocab = static_cast<size_t>(runner_model_n_vocab(c->model->model));
  const size_t n_embd = static_cast<size_t>(runner_model_n_embd(c->model->model));
  const size_t need = mode == RUNNER_LOGITS_ALL    ? n_vocab * tokens.size()
                      : mode == RUNNER_LOGITS_EMBD ? n_embd * tokens.size()
                      : mode == RUNNER_LOGITS_LAST ? n_vocab
                                                   : 0;
  if (!logits.IsEmpty() && logits.ElementLength() < need) {
    c->busy = false;
    ThrowInvalid(env, Kind::kRangeError, "logits holds " + std::to_string(logits.ElementLength()) + " floats, " + std::to_string(need) + " needed");
  }
  try {
    auto *w = new DecodeWorker(env, c, std::move(tokens), pos, mode, logits, flags);
    Napi::Promise p = w->Promise();
    w->Queue();
    return p;
  } catch (...) {
    c->busy = false;  // never leave the context stuck "busy" when starting failed
    throw;
  }
}

// kvTruncate(context, nKeep): forget every position >= nKeep.
Napi::Value KvTruncate(const Napi::CallbackInfo &info) {
  const int32_t n = Int32Arg(info[1], "nKeep");
  ContextRef c = Acquire(info[0]);
  char err[kErrLen] = {0};
  const runner_status st = runner_kv_truncate(c->ctx, n, err, kErrLen);
  c->busy = false;
  if (st != RUNNER_OK) throw StatusError(info.Env(), st, err);
  return info.Env().Undefined();
}

Napi::Value KvBytes(const Napi::CallbackInfo &info) {
  ContextRef c = Unwrap<ContextHandle>(info[0], "context");
  return Napi::Number::New(info.Env(), static_cast<double>(runner_context_kv_bytes(c->ctx)));
}

// kvShift(context, nKeep, nDiscard): drop [nKeep, nKeep + nDiscard), move the rest down, re-rope their keys.
Napi::Value KvShift(const Napi::CallbackInfo &info) {
  const int32_t keep = Int32Arg(info[1], "nKeep"), discard = Int32Arg(info[2], "nDiscard");
  ContextRef c = Acquire(info[0]);
  char err[kErrLen] = {0};
  const runner_status st = runner_kv_shift(c->ctx, keep, discard, err, kErrLen);
  c->busy = false;
  if (st != RUNNER_OK) throw StatusError(info.Env(), st, err);
  return info.Env().Undefined();
}

// kvCanShift(context) -> null, or why a context shift is refused on it
Napi::Value KvCanShift(const Napi::CallbackInfo &info) {
  ContextRef c = Unwrap<ContextHandle>(info[0], "context");
  char err[kErrLen] = {0};
  if (runner_kv_can_shift(c->ctx, err, kErrLen) == RUNNER_OK) return info.Env().Null();
  return Napi::String::New(info.Env(), err);
}

// kvInfo(context) -> {bytes, flatBytes, ringLayers, ringPositions}
Napi::Value KvInfo(const Napi::CallbackInfo &info) {
  ContextRef c = Unwrap<ContextHandle>(info[0], "context");
  runner_kv_info k{};
  runner_context_kv_info(c->ctx, &k);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("bytes", static_cast<double>(k.bytes));
  o.Set("flatBytes", static_cast<double>(k.flat_bytes));
  o.Set("ringLayers", k.ring_layers);
  o.Set("ringPositions", k.ring_positions);
  return o;
}

Napi::Value KvMinKeep(const Napi::CallbackInfo &info) {
  // As n_past: a running worker moves it.
  ContextRef c = Idle(info[0]);
  return Napi::Number::New(info.Env(), runner_kv_min_keep(c->ctx));
}

Napi::Value NPast(const Napi::CallbackInfo &info) {
  // A running worker writes n_past: reading it then would race, and the answer would be stale.
  ContextRef c = Idle(info[0]);
  return Napi::Number::New(info.Env(), runner_context_n_past(c->ctx));
}

// contextLogits(context) -> Float32Array (a copy of the last logits row computed) | null
Napi::Value ContextLogits(const Napi::CallbackInfo &info) {
  ContextRef c = Idle(info[0]);
  const float *row = runner_context_logits(c->ctx);
  if (!row) return info.Env().Null();
  const size_t n_vocab = static_cast<size_t>(runner_model_n_vocab(c->model->model));
  Napi::Float32Array out = Napi::Float32Array::New(info.Env(), n_vocab);
  std::memcpy(out.Data(), row, n_vocab * sizeof(float));
  return out;
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
                 int32_t max_tokens, SamplerParams sp, Napi::Int32Array flags, std::shared_ptr<MatcherHandle> matcher, GroupRef group,
                 DraftRef draft, std::vector<int32_t> prefix, int32_t shift_keep)
      : Napi::AsyncWorker(env), ctx_(std::move(ctx)), state_(std::move(state)), tsfn_(tsfn), prompt_(std::move(prompt)),
        history_(std::move(history)), eog_(std::move(eog)), pos_(pos), max_tokens_(max_tokens), sp_(std::move(sp)),
        matcher_(std::move(matcher)), group_(std::move(group)), draft_(std::move(draft)), prefix_(std::move(prefix)),
        shift_keep_(shift_keep) {
    if (!flags.IsEmpty()) {
      flags_ref_ = Napi::Persistent(flags);
      flags_ = flags.Data();
    }
  }

  void Execute() override {
    state_->status = GuardExecute(state_->message, [&] {
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
      p.matcher = matcher_ ? matcher_->matcher : nullptr;
      p.group = group_ ? group_->group : nullptr;
      p.draft = draft_ ? draft_->draft : nullptr;
      p.prefix = prefix_.data();
      p.n_prefix = static_cast<int32_t>(prefix_.size());
      p.context_shift = shift_keep_ >= 0;
      p.shift_keep = shift_keep_;
      char err[kErrLen] = {0};
      const runner_status st = runner_generate(ctx_->ctx, &p, &GenerateWorker::OnToken, this, flags_, &state_->stats, err, kErrLen);
      state_->message = err;
      return st;
    });
  }
  void OnOK() override {
    ctx_->busy = false;
    if (matcher_) matcher_->busy = false;
    if (draft_) draft_->busy = false;
    tsfn_.Release();  // the finalizer settles the promise once every queued token has been delivered
  }
  void OnError(const Napi::Error &e) override {
    ctx_->busy = false;
    if (matcher_) matcher_->busy = false;
    if (draft_) draft_->busy = false;
    state_->status = RUNNER_ERR_INTERNAL;
    state_->message = e.Message();
    tsfn_.Release();
  }

 private:
  static int OnToken(void *user, const runner_sample_result *r) {
    auto *self = static_cast<GenerateWorker *>(user);
    auto *ev = new (std::nothrow) TokenEvent{*r};
    if (!ev) return 1;  // out of memory: stop rather than lose a token silently
    napi_status s = self->tsfn_.NonBlockingCall(ev, [](Napi::Env env, Napi::Function fn, TokenEvent *raw) {
      std::unique_ptr<TokenEvent> e(raw);  // freed however this ends
      // Nothing may escape this callback: an exception here would surface as an uncaught one and end
      // the process (building the arrays can throw too, out of memory).
      try {
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
        fn.Call({Napi::Number::New(env, e->r.token), Napi::Number::New(env, e->r.logprob), top_ids, top_lp,
                 Napi::Boolean::New(env, e->r.forced != 0)});
      } catch (...) {
        // A throwing callback must never unwind into native code; the JS wrapper reports it.
      }
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
  std::shared_ptr<MatcherHandle> matcher_;
  GroupRef group_;
  DraftRef draft_;
  std::vector<int32_t> prefix_;
  int32_t shift_keep_;  // -1: no context shift
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
  o.Set("nForced", s.n_forced);
  o.Set("maskMs", s.mask_ms);
  o.Set("nDraftSteps", s.n_draft_steps);
  o.Set("nDrafted", s.n_drafted);
  o.Set("nAccepted", s.n_accepted);
  o.Set("draftMs", s.draft_ms);
  o.Set("nShifts", s.n_shifts);
  o.Set("nDiscarded", s.n_discarded);
  return o;
}

// generate(context, {prompt, pos, history, maxTokens, eogTokens, sampling: {...}}, onToken, flags) -> Promise<stats>
Napi::Value Generate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[1].IsObject() || !info[2].IsFunction()) ThrowInvalid(env, Kind::kTypeError, "generate(context, params, onToken, flags?)");
  Napi::Object o = info[1].As<Napi::Object>();
  std::vector<int32_t> prompt = TokensFrom(o.Get("prompt"), "prompt");
  std::vector<int32_t> history = o.Has("history") && !o.Get("history").IsUndefined() ? TokensFrom(o.Get("history"), "history") : std::vector<int32_t>();
  std::vector<int32_t> eog = TokensFrom(o.Get("eogTokens"), "eogTokens");
  int32_t pos = IntProp(o, "pos", "params"), max_tokens = IntProp(o, "maxTokens", "params");
  if (!o.Get("sampling").IsObject()) ThrowInvalid(env, Kind::kTypeError, "params.sampling must be an object");
  SamplerParams sp = ReadSamplerParams(env, o.Get("sampling").As<Napi::Object>());
  Napi::Int32Array flags = info.Length() > 3 ? FlagsFrom(info[3]) : Napi::Int32Array();
  const bool constrained = o.Has("matcher") && !o.Get("matcher").IsUndefined() && !o.Get("matcher").IsNull();
  GroupRef group;
  if (o.Has("group") && !o.Get("group").IsUndefined() && !o.Get("group").IsNull()) group = Unwrap<GroupHandle>(o.Get("group"), "group");
  DraftRef draft;
  std::vector<int32_t> prefix;
  if (o.Has("draft") && !o.Get("draft").IsUndefined() && !o.Get("draft").IsNull()) {
    draft = Unwrap<DraftHandle>(o.Get("draft"), "draft");
    prefix = TokensFrom(o.Get("prefix"), "prefix");
  }
  int32_t shift_keep = -1;
  if (o.Has("shiftKeep") && !o.Get("shiftKeep").IsUndefined()) {
    shift_keep = IntProp(o, "shiftKeep", "params");
    if (shift_keep < 0) ThrowInvalid(env, Kind::kRangeError, "params.shiftKeep must be >= 0");
  }
  ContextRef c = Acquire(info[0]);
  std::shared_ptr<MatcherHandle> matcher;
  bool draft_taken = false;
  try {
    if (draft) {
      bool expected = false;
      if (!draft->busy.compare_exchange_strong(expected, true))
        Throw(env, Kind::kError, runner_status_code(RUNNER_ERR_BUSY), "draft is in use by another generation");
      draft_taken = true;
    }
    if (constrained) matcher = AcquireMatcher(o.Get("matcher"), "params.matcher");
    auto state = std::make_shared<GenerateState>(env);
    Napi::ThreadSafeFunction tsfn = Napi::ThreadSafeFunction::New(
        env, info[2].As<Napi::Function>(), "runner.generate.tokens", 0, 1, [state](Napi::Env env) {
          if (state->status != RUNNER_OK) state->deferred.Reject(StatusError(env, state->status, state->message).Value());
          else state->deferred.Resolve(StatsToJs(env, state->stats));
        });
    auto *w = new GenerateWorker(env, c, state, tsfn, std::move(prompt), std::move(history), std::move(eog), pos, max_tokens,
                                 std::move(sp), flags, matcher, group, draft, std::move(prefix), shift_keep);
    w->Queue();
    return state->deferred.Promise();
  } catch (...) {
    c->busy = false;  // never leave the context (or the matcher, the draft) stuck "busy" when starting failed
    if (matcher) matcher->busy = false;
    if (draft_taken) draft->busy = false;
    throw;
  }
}

// ---- drafts ------------------------------------------------------------------------------------

// draftCreate({kind, nMax, ngramMin, ngramMax, pMin}, draftContext | null) -> draft handle. The draft
// model's context is taken (busy) until draftFree.
Napi::Value DraftCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) ThrowInvalid(env, Kind::kTypeError, "draftCreate(params, context?): params must be an object");
  Napi::Object o = info[0].As<Napi::Object>();
  runner_draft_params p{};
  p.kind = IntProp(o, "kind", "params");
  p.n_max = IntProp(o, "nMax", "params");
  p.ngram_min = IntProp(o, "ngramMin", "params");
  p.ngram_max = IntProp(o, "ngramMax", "params");
  p.p_min = static_cast<float>(NumberArg(o.Get("pMin"), "params.pMin"));
  ContextRef c;
  if (info.Length() > 1 && !info[1].IsNull() && !info[1].IsUndefined()) c = Acquire(info[1]);
  char err[kErrLen] = {0};
  runner_draft *d = nullptr;
  const runner_status st = runner_draft_create(&p, c ? c->ctx : nullptr, &d, err, kErrLen);
  if (st != RUNNER_OK) {
    if (c) c->busy = false;
    throw StatusError(env, st, err);
  }
  auto h = std::make_shared<DraftHandle>();
  h->draft = d;
  h->ctx = c;
  return Wrap(env, h);
}

// draftFree(draft): freed (and its context released) once no generation uses it.
Napi::Value DraftFree(const Napi::CallbackInfo &info) {
  auto &sp = Slot<DraftHandle>(info[0], "draft");
  if (sp) sp->disposed = true;
  sp.reset();
  return info.Env().Undefined();
}

// ---- decode groups -----------------------------------------------------------------------------

// groupCreate(model, {threads, maxMembers, waitUs}) -> group handle (synchronous: a pool and a small scratch)
Napi::Value GroupCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  ModelRef m = Unwrap<ModelHandle>(info[0], "model");
  if (!info[1].IsObject()) ThrowInvalid(env, Kind::kTypeError, "groupCreate(model, params): params must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  const int32_t threads = IntProp(o, "threads", "params"), max_members = IntProp(o, "maxMembers", "params");
  const int32_t wait_us = IntProp(o, "waitUs", "params");
  char err[kErrLen] = {0};
  runner_group *g = nullptr;
  const runner_status st = runner_group_create(m->model, threads, max_members, wait_us, &g, err, kErrLen);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  auto h = std::make_shared<GroupHandle>();
  h->group = g;
  h->model = m;
  return Wrap(env, h);
}

// groupFree(group): the group goes once its running generations end.
Napi::Value GroupFree(const Napi::CallbackInfo &info) {
  auto &sp = Slot<GroupHandle>(info[0], "group");
  if (sp) sp->disposed = true;
  sp.reset();
  return info.Env().Undefined();
}

// groupStats(group) -> {steps, tokens}
Napi::Value GroupStats(const Napi::CallbackInfo &info) {
  GroupRef g = Unwrap<GroupHandle>(info[0], "group");
  runner_group_stats s{};
  runner_group_stats_get(g->group, &s);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("steps", static_cast<double>(s.steps));
  o.Set("tokens", static_cast<double>(s.tokens));
  return o;
}

// tensorRoles() -> the role names in id order, for the test that src/lib/arch agrees.
Napi::Value TensorRoles(const Napi::CallbackInfo &info) {
  Napi::Array out = Napi::Array::New(info.Env());
  for (int32_t r = 0; runner_tensor_role_name(r) != nullptr; r++) out.Set(static_cast<uint32_t>(r), runner_tensor_role_name(r));
  return out;
}

}  // namespace

std::shared_ptr<void> AcquireModel(const Napi::Value &v, const char *what, runner_model **out) {
  ModelRef m = Unwrap<ModelHandle>(v, what);
  *out = m->model;
  return m;
}

void RegisterEngineBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("modelLoad", Napi::Function::New(env, ModelLoad, "modelLoad"));
  exports.Set("modelFree", Napi::Function::New(env, ModelFree, "modelFree"));
  exports.Set("modelAddLora", Napi::Function::New(env, ModelAddLora, "modelAddLora"));
  exports.Set("contextCreate", Napi::Function::New(env, ContextCreate, "contextCreate"));
  exports.Set("contextFree", Napi::Function::New(env, ContextFree, "contextFree"));
  exports.Set("decode", Napi::Function::New(env, Decode, "decode"));
  exports.Set("kvTruncate", Napi::Function::New(env, KvTruncate, "kvTruncate"));
  exports.Set("nPast", Napi::Function::New(env, NPast, "nPast"));
  exports.Set("kvBytes", Napi::Function::New(env, KvBytes, "kvBytes"));
  exports.Set("kvInfo", Napi::Function::New(env, KvInfo, "kvInfo"));
  exports.Set("kvShift", Napi::Function::New(env, KvShift, "kvShift"));
  exports.Set("kvCanShift", Napi::Function::New(env, KvCanShift, "kvCanShift"));
  exports.Set("kvMinKeep", Napi::Function::New(env, KvMinKeep, "kvMinKeep"));
  exports.Set("contextLogits", Napi::Function::New(env, ContextLogits, "contextLogits"));
  exports.Set("generate", Napi::Function::New(env, Generate, "generate"));
  exports.Set("draftCreate", Napi::Function::New(env, DraftCreate, "draftCreate"));
  exports.Set("draftFree", Napi::Function::New(env, DraftFree, "draftFree"));
  exports.Set("groupCreate", Napi::Function::New(env, GroupCreate, "groupCreate"));
  exports.Set("groupFree", Napi::Function::New(env, GroupFree, "groupFree"));
  exports.Set("groupStats", Napi::Function::New(env, GroupStats, "groupStats"));
  exports.Set("tensorRoles", Napi::Function::New(env, TensorRoles, "tensorRoles"));
}

}  // namespace runner_addon

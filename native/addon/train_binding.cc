// LoRA trainers' Node-API face (runner.h "LoRA training"): create one over a loaded model, move its
// vectors in and out as Float64Arrays, run a sample's loss and gradient on a libuv worker thread
// (a Promise), and take optimizer steps. No arithmetic here.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "bindings.h"

namespace runner_addon {
namespace {

constexpr int kErrLen = 512;

struct TrainerHandle {
  runner_trainer *trainer = nullptr;
  std::shared_ptr<void> model;  // keeps the base mapped while the trainer lives
  std::atomic<bool> busy{false};
  bool disposed = false;
  ~TrainerHandle() { runner_trainer_free(trainer); }
};
using TrainerRef = std::shared_ptr<TrainerHandle>;

constexpr napi_type_tag kTrainerTag = {0x52554e5452414e49ULL, 0x4e45524844304c31ULL};

std::shared_ptr<TrainerHandle> &Slot(const Napi::Value &v) {
  if (!v.IsExternal() || !v.As<Napi::External<TrainerRef>>().CheckTypeTag(&kTrainerTag))
    ThrowInvalid(v.Env(), Kind::kTypeError, "trainer must be a trainer handle from the engine");
  return *v.As<Napi::External<TrainerRef>>().Data();
}

TrainerRef Idle(const Napi::Value &v) {
  TrainerRef t = Slot(v);
  if (!t || t->disposed) Throw(v.Env(), Kind::kError, runner_status_code(RUNNER_ERR_DISPOSED), "trainer has been disposed");
  if (t->busy) Throw(v.Env(), Kind::kError, runner_status_code(RUNNER_ERR_BUSY), "trainer is busy with a sample");
  return t;
}

std::vector<int32_t> Int32s(const Napi::Value &v, const std::string &what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    ThrowInvalid(v.Env(), Kind::kTypeError, what + " must be an Int32Array");
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  return std::vector<int32_t>(a.Data(), a.Data() + a.ElementLength());
}

double NumberProp(const Napi::Object &o, const char *key) {
  return NumberArg(o.Get(key), std::string("params.") + key);
}

// trainerCreate(model, {nCtx, rank, alpha, dropout, threads, roles: Int32Array, layers: Int32Array}) -> trainer
Napi::Value TrainerCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  runner_model *model = nullptr;
  std::shared_ptr<void> keep = AcquireModel(info[0], "model", &model);
  if (!info[1].IsObject()) ThrowInvalid(env, Kind::kTypeError, "trainerCreate(model, params): params must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  const std::vector<int32_t> roles = Int32s(o.Get("roles"), "params.roles"), layers = Int32s(o.Get("layers"), "params.layers");
  if (roles.size() != layers.size()) ThrowInvalid(env, Kind::kRangeError, "params.roles and params.layers differ in length");
  runner_trainer_params p{};
  p.n_ctx = Int32Arg(o.Get("nCtx"), "params.nCtx");
  p.rank = Int32Arg(o.Get("rank"), "params.rank");
  p.alpha = static_cast<float>(NumberProp(o, "alpha"));
  p.dropout = static_cast<float>(NumberProp(o, "dropout"));
  p.n_threads = Int32Arg(o.Get("threads"), "params.threads");
  p.roles = roles.data();
  p.layers = layers.data();
  p.n_targets = static_cast<int32_t>(roles.size());
  char err[kErrLen] = {0};
  runner_trainer *t = nullptr;
  const runner_status st = runner_trainer_create(model, &p, &t, err, kErrLen);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  auto h = std::make_shared<TrainerHandle>();
  h->trainer = t;
  h->model = std::move(keep);
  auto ext = Napi::External<TrainerRef>::New(env, new TrainerRef(std::move(h)), [](Napi::Env, TrainerRef *r) { delete r; });
  ext.TypeTag(&kTrainerTag);
  return ext;
}

Napi::Value TrainerFree(const Napi::CallbackInfo &info) {
  TrainerRef &sp = Slot(info[0]);
  if (sp) sp->disposed = true;
  sp.reset();  // a sample still running keeps it until it ends
  return info.Env().Undefined();
}

Napi::Value TrainerNParams(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<double>(runner_trainer_n_params(Idle(info[0])->trainer)));
}

// trainerGet(trainer, what) -> Float64Array
Napi::Value TrainerGet(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  TrainerRef t = Idle(info[0]);
  const int64_t n = runner_trainer_n_params(t->trainer);
  Napi::Float64Array out = Napi::Float64Array::New(env, static_cast<size_t>(n));
  char err[kErrLen] = {0};
  const runner_status st = runner_trainer_get(t->trainer, Int32Arg(info[1], "what"), out.Data(), n, err, kErrLen);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  return out;
}

// trainerSet(trainer, what, values: Float64Array)
Napi::Value TrainerSet(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  TrainerRef t = Idle(info[0]);
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
    ThrowInvalid(env, Kind::kTypeError, "values must be a Float64Array");
  Napi::Float64Array v = info[2].As<Napi::Float64Array>();
  char err[kErrLen] = {0};
  const runner_status st =
      runner_trainer_set(t->trainer, Int32Arg(info[1], "what"), v.Data(), static_cast<int64_t>(v.ElementLength()), err, kErrLen);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  return env.Undefined();
}

Napi::Value TrainerSteps(const Napi::CallbackInfo &info) {
  TrainerRef t = Idle(info[0]);
  if (info.Length() > 1 && !info[1].IsUndefined()) runner_trainer_set_steps(t->trainer, static_cast<int64_t>(NumberArg(info[1], "steps")));
  return Napi::Number::New(info.Env(), static_cast<double>(runner_trainer_steps(t->trainer)));
}

class SampleWorker : public Napi::AsyncWorker {
 public:
  SampleWorker(Napi::Env env, TrainerRef t, std::vector<int32_t> tokens, std::vector<uint8_t> scored, bool grad, uint64_t seed,
               Napi::Int32Array flags)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), t_(std::move(t)), tokens_(std::move(tokens)),
        scored_(std::move(scored)), grad_(grad), seed_(seed) {
    if (!flags.IsEmpty()) {
      flags_ref_ = Napi::Persistent(flags);
      abort_ = flags.Data();
    }
  }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    status_ = GuardExecute(message_, [&] {
      char err[kErrLen] = {0};
      const runner_status st = runner_trainer_sample(t_->trainer, tokens_.data(), scored_.data(), static_cast<int32_t>(tokens_.size()),
                                                     grad_ ? 1 : 0, seed_, &loss_, &n_scored_, abort_, err, kErrLen);
      message_ = err;
      return st;
    });
  }
  void OnOK() override {
    t_->busy = false;
    if (status_ != RUNNER_OK) {
      deferred_.Reject(StatusError(Env(), status_, message_).Value());
      return;
    }
    Napi::Object o = Napi::Object::New(Env());
    o.Set("loss", loss_);
    o.Set("scored", n_scored_);
    deferred_.Resolve(o);
  }
  void OnError(const Napi::Error &e) override {
    t_->busy = false;
    deferred_.Reject(StatusError(Env(), RUNNER_ERR_INTERNAL, e.Message()).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  TrainerRef t_;
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> scored_;
  bool grad_;
  uint64_t seed_;
  Napi::Reference<Napi::Int32Array> flags_ref_;
  const volatile int32_t *abort_ = nullptr;
  runner_status status_ = RUNNER_OK;
  std::string message_;
  double loss_ = 0;
  int32_t n_scored_ = 0;
};

// trainerSample(trainer, tokens: Int32Array, scored: Uint8Array, grad: boolean, seed: bigint, flags?: Int32Array)
//   -> Promise<{loss, scored}>
Napi::Value TrainerSample(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  TrainerRef t = Idle(info[0]);
  std::vector<int32_t> tokens = Int32s(info[1], "tokens");
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    ThrowInvalid(env, Kind::kTypeError, "scored must be a Uint8Array");
  Napi::Uint8Array sc = info[2].As<Napi::Uint8Array>();
  if (sc.ElementLength() != tokens.size()) ThrowInvalid(env, Kind::kRangeError, "scored must have one flag per token");
  std::vector<uint8_t> scored(sc.Data(), sc.Data() + sc.ElementLength());
  if (!info[4].IsBigInt()) ThrowInvalid(env, Kind::kTypeError, "seed must be a bigint");
  bool lossless = false;
  const uint64_t seed = info[4].As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) ThrowInvalid(env, Kind::kRangeError, "seed must fit 64 bits");
  Napi::Int32Array flags;
  if (info.Length() > 5 && info[5].IsTypedArray()) flags = info[5].As<Napi::Int32Array>();
  t->busy = true;
  auto *w = new SampleWorker(env, t, std::move(tokens), std::move(scored), info[3].ToBoolean().Value(), seed, flags);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

// trainerOptimize(trainer, {kind, lr, beta1, beta2, eps, weightDecay, gradScale, maxGradNorm}) -> grad norm
Napi::Value TrainerOptimize(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  TrainerRef t = Idle(info[0]);
  if (!info[1].IsObject()) ThrowInvalid(env, Kind::kTypeError, "trainerOptimize(trainer, params): params must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  runner_optimizer_params p{};
  p.kind = Int32Arg(o.Get("kind"), "params.kind");
  p.lr = NumberProp(o, "lr");
  p.beta1 = NumberProp(o, "beta1");
  p.beta2 = NumberProp(o, "beta2");
  p.eps = NumberProp(o, "eps");
  p.weight_decay = NumberProp(o, "weightDecay");
  p.grad_scale = NumberProp(o, "gradScale");
  p.max_grad_norm = NumberProp(o, "maxGradNorm");
  double norm = 0;
  char err[kErrLen] = {0};
  const runner_status st = runner_trainer_optimize(t->trainer, &p, &norm, err, kErrLen);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  return Napi::Number::New(env, norm);
}

}  // namespace

void RegisterTrainBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("trainerCreate", Napi::Function::New(env, TrainerCreate, "trainerCreate"));
  exports.Set("trainerFree", Napi::Function::New(env, TrainerFree, "trainerFree"));
  exports.Set("trainerNParams", Napi::Function::New(env, TrainerNParams, "trainerNParams"));
  exports.Set("trainerGet", Napi::Function::New(env, TrainerGet, "trainerGet"));
  exports.Set("trainerSet", Napi::Function::New(env, TrainerSet, "trainerSet"));
  exports.Set("trainerSteps", Napi::Function::New(env, TrainerSteps, "trainerSteps"));
  exports.Set("trainerSample", Napi::Function::New(env, TrainerSample, "trainerSample"));
  exports.Set("trainerOptimize", Napi::Function::New(env, TrainerOptimize, "trainerOptimize"));
}

}  // namespace runner_addon

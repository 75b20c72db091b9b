// The test addon's entry point: abiVersion (the same check as the product addon's), the hooks of
// each area, and a worker that throws, to hold the product's worker error mapping (args.h
// GuardExecute) to its contract.
#include <new>
#include <stdexcept>
#include <string>

#include "../addon/args.h"
#include "hooks.h"

namespace {

Napi::Value AbiVersion(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), runner_abi_version());
}

// A worker whose Execute throws `what` ('bad_alloc', 'runtime_error', 'unknown') or nothing
// ('none'), through the product's guard: the promise rejects with the code the guard chose.
class ThrowingWorker : public Napi::AsyncWorker {
 public:
  ThrowingWorker(Napi::Env env, std::string what) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), what_(std::move(what)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    status_ = runner_addon::GuardExecute(message_, [&]() -> runner_status {
      if (what_ == "bad_alloc") throw std::bad_alloc();
      if (what_ == "runtime_error") throw std::runtime_error("a test failure");
      if (what_ == "unknown") throw 42;
      return RUNNER_OK;
    });
  }
  void OnOK() override {
    if (status_ != RUNNER_OK) deferred_.Reject(runner_addon::StatusError(Env(), status_, message_).Value());
    else deferred_.Resolve(Env().Undefined());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string what_;
  runner_status status_ = RUNNER_OK;
  std::string message_;
};

// testWorkerThrow(what) -> Promise<void>
Napi::Value TestWorkerThrow(const Napi::CallbackInfo& info) {
  if (!info[0].IsString()) runner_addon::ThrowInvalid(info.Env(), runner_addon::Kind::kTypeError, "testWorkerThrow: what must be a string");
  auto* w = new ThrowingWorker(info.Env(), info[0].As<Napi::String>().Utf8Value());
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  RegisterKernelHooks(env, exports);
  RegisterAmxHooks(env, exports);
  RegisterSamplerHooks(env, exports);
  exports.Set("abiVersion", Napi::Function::New(env, AbiVersion, "abiVersion"));
  exports.Set("testWorkerThrow", Napi::Function::New(env, TestWorkerThrow, "testWorkerThrow"));
  return exports;
}

}  // namespace

NODE_API_MODULE(runner_native_test, Init)

// Constrained decoding's JavaScript face (runner.h, "constrained decoding"): grammar programs from an
// Int32Array, token tries from a vocabulary's bytes, matchers over both. Masks and accepts are
// synchronous (one mask is well under the cost of a token); the generate loop drives a matcher on
// its worker thread (engine_binding.cc), and while it does every call here on that matcher is
// refused as busy. No parsing or arithmetic here: conversion and argument checks only.
#include <cstdint>
#include <memory>
#include <string>

#include "args.h"
#include "bindings.h"

namespace runner_addon {
namespace {

constexpr int kErrLen = 512;

template <typename T> struct GTag;
template <> struct GTag<GrammarHandle> { static constexpr napi_type_tag tag = {0x52554e4752414d4dULL, 0x4152484e444c3031ULL}; };
template <> struct GTag<TrieHandle> { static constexpr napi_type_tag tag = {0x52554e5452494548ULL, 0x4e444c3030303031ULL}; };
template <> struct GTag<MatcherHandle> { static constexpr napi_type_tag tag = {0x52554e4d41544348ULL, 0x45524844304c3031ULL}; };

template <typename T>
Napi::External<std::shared_ptr<T>> Wrap(Napi::Env env, std::shared_ptr<T> p) {
  auto ext = Napi::External<std::shared_ptr<T>>::New(env, new std::shared_ptr<T>(std::move(p)),
                                                     [](Napi::Env, std::shared_ptr<T> *h) { delete h; });
  ext.TypeTag(&GTag<T>::tag);
  return ext;
}

template <typename T>
std::shared_ptr<T> &Slot(const Napi::Value &v, const char *what) {
  if (!v.IsExternal() || !v.As<Napi::External<std::shared_ptr<T>>>().CheckTypeTag(&GTag<T>::tag))
    ThrowInvalid(v.Env(), Kind::kTypeError, std::string(what) + " must be a " + what + " handle from the engine");
  return *v.As<Napi::External<std::shared_ptr<T>>>().Data();
}

void Check(const Napi::Env &env, runner_status st, const char *err) {
  if (st != RUNNER_OK) throw StatusError(env, st, err);
}

// grammarCreate(program: Int32Array) -> grammar
Napi::Value GrammarCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    ThrowInvalid(env, Kind::kTypeError, "grammarCreate(program): program must be an Int32Array");
  Napi::Int32Array a = info[0].As<Napi::Int32Array>();
  auto h = std::make_shared<GrammarHandle>();
  char err[kErrLen] = {0};
  Check(env, runner_grammar_create(a.Data(), static_cast<int64_t>(a.ElementLength()), &h->grammar, err, kErrLen), err);
  return Wrap(env, h);
}

// tokenTrieCreate(bytes: Uint8Array, offsets: Float64Array of nVocab + 1) -> trie
Napi::Value TokenTrieCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array || !info[1].IsTypedArray() ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
    ThrowInvalid(env, Kind::kTypeError, "tokenTrieCreate(bytes: Uint8Array, offsets: Float64Array)");
  Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  Napi::Float64Array off = info[1].As<Napi::Float64Array>();
  const size_t n = off.ElementLength();
  if (n < 2 || n - 1 > static_cast<size_t>(INT32_MAX)) ThrowInvalid(env, Kind::kRangeError, "tokenTrieCreate: offsets must hold nVocab + 1 entries");
  std::vector<int64_t> o(n);
  for (size_t i = 0; i < n; i++) {
    const double d = off[i];
    if (!(d >= 0 && d <= static_cast<double>(bytes.ElementLength())) || d != static_cast<double>(static_cast<int64_t>(d)))
      ThrowInvalid(env, Kind::kRangeError, "tokenTrieCreate: offsets[" + std::to_string(i) + "] = " + NumberText(d) + " is not a byte index");
    o[i] = static_cast<int64_t>(d);
  }
  auto h = std::make_shared<TrieHandle>();
  char err[kErrLen] = {0};
  Check(env, runner_token_trie_create(bytes.Data(), o.data(), static_cast<int32_t>(n - 1), &h->trie, err, kErrLen), err);
  return Wrap(env, h);
}

// matcherCreate(grammar, trie | null) -> matcher
Napi::Value MatcherCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  auto g = Slot<GrammarHandle>(info[0], "grammar");
  std::shared_ptr<TrieHandle> t;
  if (!info[1].IsNull() && !info[1].IsUndefined()) t = Slot<TrieHandle>(info[1], "trie");
  auto h = std::make_shared<MatcherHandle>();
  h->grammar = g;
  h->trie = t;
  char err[kErrLen] = {0};
  Check(env, runner_matcher_create(g->grammar, t ? t->trie : nullptr, &h->matcher, err, kErrLen), err);
  return Wrap(env, h);
}

// A matcher for a synchronous call: not disposed, not driven by a generation.
std::shared_ptr<MatcherHandle> Idle(const Napi::Value &v) {
  auto h = Slot<MatcherHandle>(v, "matcher");
  if (!h || h->disposed) Throw(v.Env(), Kind::kError, runner_status_code(RUNNER_ERR_DISPOSED), "matcher has been disposed");
  if (h->busy.load()) Throw(v.Env(), Kind::kError, runner_status_code(RUNNER_ERR_BUSY), "matcher is in use by a generation");
  return h;
}

Napi::Value MatcherReset(const Napi::CallbackInfo &info) {
  auto h = Idle(info[0]);
  char err[kErrLen] = {0};
  Check(info.Env(), runner_matcher_reset(h->matcher, err, kErrLen), err);
  return info.Env().Undefined();
}

Napi::Value MatcherIsComplete(const Napi::CallbackInfo &info) {
  return Napi::Boolean::New(info.Env(), runner_matcher_is_complete(Idle(info[0])->matcher) != 0);
}

// matcherFillMask(matcher, bits: Uint32Array of ceil(nVocab / 32)) -> {allowed, only}
Napi::Value MatcherFillMask(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  auto h = Idle(info[0]);
  if (!h->trie) ThrowInvalid(env, Kind::kTypeError, "matcherFillMask: the matcher has no vocabulary");
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    ThrowInvalid(env, Kind::kTypeError, "matcherFillMask(matcher, bits: Uint32Array)");
  Napi::Uint32Array bits = info[1].As<Napi::Uint32Array>();
  const size_t need = (static_cast<size_t>(runner_matcher_n_vocab(h->matcher)) + 31) / 32;
  if (bits.ElementLength() != need) ThrowInvalid(env, Kind::kRangeError, "matcherFillMask: bits must hold " + std::to_string(need) + " words");
  int32_t n_allowed = 0, only = -1;
  char err[kErrLen] = {0};
  Check(env, runner_matcher_fill_mask(h->matcher, bits.Data(), &n_allowed, &only, err, kErrLen), err);
  Napi::Object o = Napi::Object::New(env);
  o.Set("allowed", n_allowed);
  o.Set("only", only);
  return o;
}

Napi::Value MatcherAcceptToken(const Napi::CallbackInfo &info) {
  auto h = Idle(info[0]);
  const int32_t token = Int32Arg(info[1], "token");
  char err[kErrLen] = {0};
  Check(info.Env(), runner_matcher_accept_token(h->matcher, token, err, kErrLen), err);
  return info.Env().Undefined();
}

// matcherAcceptBytes(matcher, bytes: Uint8Array) -> index of the first refused byte, or -1
Napi::Value MatcherAcceptBytes(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  auto h = Idle(info[0]);
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    ThrowInvalid(env, Kind::kTypeError, "matcherAcceptBytes(matcher, bytes: Uint8Array)");
  Napi::Uint8Array b = info[1].As<Napi::Uint8Array>();
  int64_t dead_at = -1;
  char err[kErrLen] = {0};
  Check(env, runner_matcher_accept_bytes(h->matcher, b.Data(), static_cast<int64_t>(b.ElementLength()), &dead_at, err, kErrLen), err);
  return Napi::Number::New(env, static_cast<double>(dead_at));
}

// matcherFree(matcher): frees now unless a generation drives it (then when that ends and JS lets go).
Napi::Value MatcherFree(const Napi::CallbackInfo &info) {
  auto &slot = Slot<MatcherHandle>(info[0], "matcher");
  if (slot && !slot->busy.load()) slot.reset();
  else if (slot) slot->disposed = true;
  return info.Env().Undefined();
}

}  // namespace

std::shared_ptr<MatcherHandle> AcquireMatcher(const Napi::Value &v, const char *what) {
  auto h = Slot<MatcherHandle>(v, what);
  if (!h || h->disposed) Throw(v.Env(), Kind::kError, runner_status_code(RUNNER_ERR_DISPOSED), std::string(what) + " has been disposed");
  if (!h->trie) ThrowInvalid(v.Env(), Kind::kTypeError, std::string(what) + " has no vocabulary");
  bool expected = false;
  if (!h->busy.compare_exchange_strong(expected, true))
    Throw(v.Env(), Kind::kError, runner_status_code(RUNNER_ERR_BUSY), std::string(what) + " is in use by another generation");
  return h;
}

void RegisterGrammarBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("grammarCreate", Napi::Function::New(env, GrammarCreate, "grammarCreate"));
  exports.Set("tokenTrieCreate", Napi::Function::New(env, TokenTrieCreate, "tokenTrieCreate"));
  exports.Set("matcherCreate", Napi::Function::New(env, MatcherCreate, "matcherCreate"));
  exports.Set("matcherReset", Napi::Function::New(env, MatcherReset, "matcherReset"));
  exports.Set("matcherIsComplete", Napi::Function::New(env, MatcherIsComplete, "matcherIsComplete"));
  exports.Set("matcherFillMask", Napi::Function::New(env, MatcherFillMask, "matcherFillMask"));
  exports.Set("matcherAcceptToken", Napi::Function::New(env, MatcherAcceptToken, "matcherAcceptToken"));
  exports.Set("matcherAcceptBytes", Napi::Function::New(env, MatcherAcceptBytes, "matcherAcceptBytes"));
  exports.Set("matcherFree", Napi::Function::New(env, MatcherFree, "matcherFree"));
}

}  // namespace runner_addon

// Argument checks and coded errors shared by the addon's files (and the test addon's): every bad
// argument becomes a JavaScript error with a `code` and a message naming the argument and its value.
// Only runner.h, node-addon-api and the standard library.
#pragma once
#include <napi.h>

#include <cstdint>
#include <exception>
#include <new>
#include <string>

#include "runner.h"

namespace runner_addon {

enum class Kind { kError, kTypeError, kRangeError };

// A JavaScript error of `kind` with `code` set; never returns.
[[noreturn]] void Throw(const Napi::Env &env, Kind kind, const char *code, const std::string &message);

// The engine's status as a JavaScript error: its code (runner_status_code) and the message.
Napi::Error StatusError(const Napi::Env &env, runner_status status, const std::string &message);

// Argument validation errors of the engine's calls: ENGINE_INVALID_ARGUMENT.
[[noreturn]] void ThrowInvalid(const Napi::Env &env, Kind kind, const std::string &message);

// Runs the body of an AsyncWorker's Execute (off the main thread, where no JavaScript error can be
// made) and turns a C++ exception into a status and message, so that it reaches JavaScript with the
// meaning it has: out of memory is ENGINE_NO_MEMORY, anything else ENGINE_INTERNAL (a bug), never
// an argument error. body() returns the engine's status and fills `message`.
template <typename Body>
runner_status GuardExecute(std::string &message, Body &&body) noexcept {
  // Setting the message can itself run out of memory: then it stays as it was.
  auto say = [&message](const char *what, const char *detail) noexcept {
    try {
      message = std::string(what) + detail;
    } catch (...) {
    }
  };
  try {
    return body();
  } catch (const std::bad_alloc &) {
    say("out of memory in the native binding", "");
    return RUNNER_ERR_NO_MEMORY;
  } catch (const std::exception &e) {
    say("internal error in the native binding: ", e.what());
    return RUNNER_ERR_INTERNAL;
  } catch (...) {
    say("internal error in the native binding: ", "an unknown exception");
    return RUNNER_ERR_INTERNAL;
  }
}

// The shortest of %.15g..%.17g that reads back as x ("NaN", "Infinity" for those).
std::string NumberText(double x);

// An exact 32-bit integer, or ENGINE_INVALID_ARGUMENT naming `what` (no silent NaN -> 0 or 1.5 -> 1).
int32_t Int32Arg(const Napi::Value &v, const std::string &what);
// Any number (NaN and infinities included: the engine checks ranges and names the field).
double NumberArg(const Napi::Value &v, const std::string &what);

// ---- weight types (KERNEL_* codes: they also serve the test hooks) ----------------------------

// A type given as a ggml id (number) or name ("Q4_0", case-insensitive) that the engine implements.
runner_type_info RequireType(const Napi::Env &env, const Napi::Value &v, const char *fn);
// A non-negative safe integer, or KERNEL_BAD_ARGUMENT naming `where`.
int64_t RequireCount(const Napi::Env &env, const Napi::Value &v, const std::string &where);
// Bytes that n values of the type take; refuses n that is not a multiple of the block size.
size_t RowBytes(const Napi::Env &env, const runner_type_info &t, int64_t n, const std::string &where);
Napi::Uint8Array RequireBytes(const Napi::Env &env, const Napi::Value &v, const std::string &where);
Napi::Float32Array RequireFloats(const Napi::Env &env, const Napi::Value &v, const std::string &where);
void RequireArgs(const Napi::CallbackInfo &info, size_t min, const char *usage);
// Copy of an output buffer placed `offset` bytes into a fresh ArrayBuffer (to test any alignment).
Napi::Uint8Array NewBytes(const Napi::Env &env, size_t bytes, size_t offset);

}  // namespace runner_addon

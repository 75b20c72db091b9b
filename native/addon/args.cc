#include "args.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace runner_addon {

void Throw(const Napi::Env &env, Kind kind, const char *code, const std::string &message) {
  Napi::Error error = kind == Kind::kTypeError    ? Napi::Error(Napi::TypeError::New(env, message))
                      : kind == Kind::kRangeError ? Napi::Error(Napi::RangeError::New(env, message))
                                                  : Napi::Error::New(env, message);
  error.Value().Set("code", Napi::String::New(env, code));
  throw error;
}

Napi::Error StatusError(const Napi::Env &env, runner_status status, const std::string &message) {
  const char *code = runner_status_code(status);
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code ? code : runner_status_code(RUNNER_ERR_INTERNAL)));
  return e;
}

void ThrowInvalid(const Napi::Env &env, Kind kind, const std::string &message) {
  Throw(env, kind, runner_status_code(RUNNER_ERR_INVALID_ARGUMENT), message);
}

std::string NumberText(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

int32_t Int32Arg(const Napi::Value &v, const std::string &what) {
  if (!v.IsNumber()) ThrowInvalid(v.Env(), Kind::kTypeError, what + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != static_cast<double>(static_cast<int32_t>(d)))
    ThrowInvalid(v.Env(), Kind::kRangeError, what + " must be a 32-bit integer, got " + NumberText(d));
  return static_cast<int32_t>(d);
}

double NumberArg(const Napi::Value &v, const std::string &what) {
  if (!v.IsNumber()) ThrowInvalid(v.Env(), Kind::kTypeError, what + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

namespace {
std::string Upper(std::string s) {
  for (char &c : s) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  return s;
}
}  // namespace

runner_type_info RequireType(const Napi::Env &env, const Napi::Value &v, const char *fn) {
  const std::string where = std::string(fn) + ": type";
  runner_type_info info{};
  if (v.IsNumber()) {
    const double id = v.As<Napi::Number>().DoubleValue();
    if (std::isfinite(id) && std::trunc(id) == id && id >= 0 && id <= INT32_MAX &&
        runner_type_info_of(static_cast<int32_t>(id), &info) == RUNNER_OK)
      return info;
    const std::string shown = std::isfinite(id) && std::trunc(id) == id && std::fabs(id) < 1e15 ? std::to_string(static_cast<long long>(id)) : std::to_string(id);
    Throw(env, Kind::kError, "KERNEL_UNSUPPORTED_TYPE", where + " " + shown + " is not a type the engine implements");
  }
  if (v.IsString()) {
    const std::string name = Upper(v.As<Napi::String>().Utf8Value());
    for (int32_t i = 0; i < runner_type_count(); ++i) {
      if (runner_type_info_at(i, &info) == RUNNER_OK && name == info.name) return info;
    }
    Throw(env, Kind::kError, "KERNEL_UNSUPPORTED_TYPE", where + " '" + name + "' is not a type the engine implements");
  }
  Throw(env, Kind::kTypeError, "KERNEL_BAD_ARGUMENT", where + " must be a ggml type id or name");
}

int64_t RequireCount(const Napi::Env &env, const Napi::Value &v, const std::string &where) {
  if (!v.IsNumber()) Throw(env, Kind::kTypeError, "KERNEL_BAD_ARGUMENT", where + " must be a number");
  const double x = v.As<Napi::Number>().DoubleValue();
  if (!(std::isfinite(x) && std::trunc(x) == x && x >= 0 && x <= 9007199254740991.0)) {
    Throw(env, Kind::kError, "KERNEL_BAD_ARGUMENT", where + " must be a non-negative integer");
  }
  return static_cast<int64_t>(x);
}

size_t RowBytes(const Napi::Env &env, const runner_type_info &t, int64_t n, const std::string &where) {
  uint64_t bytes = 0;
  const int rc = runner_type_row_size(t.type, n, &bytes);
  if (rc == -1) {
    Throw(env, Kind::kError, "KERNEL_BAD_ARGUMENT",
          where + " = " + std::to_string(n) + " is not a multiple of " + t.name + "'s block size " + std::to_string(t.block_size));
  }
  if (rc != 0 || bytes > SIZE_MAX) Throw(env, Kind::kError, "KERNEL_BAD_ARGUMENT", where + " = " + std::to_string(n) + " is too large");
  return static_cast<size_t>(bytes);
}

Napi::Uint8Array RequireBytes(const Napi::Env &env, const Napi::Value &v, const std::string &where) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    Throw(env, Kind::kTypeError, "KERNEL_BAD_ARGUMENT", where + " must be a Uint8Array");
  }
  return v.As<Napi::Uint8Array>();
}

Napi::Float32Array RequireFloats(const Napi::Env &env, const Napi::Value &v, const std::string &where) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    Throw(env, Kind::kTypeError, "KERNEL_BAD_ARGUMENT", where + " must be a Float32Array");
  }
  return v.As<Napi::Float32Array>();
}

void RequireArgs(const Napi::CallbackInfo &info, size_t min, const char *usage) {
  if (info.Length() < min) Throw(info.Env(), Kind::kTypeError, "KERNEL_BAD_ARGUMENT", std::string("expected ") + usage);
}

Napi::Uint8Array NewBytes(const Napi::Env &env, size_t bytes, size_t offset) {
  Napi::ArrayBuffer buf = Napi::ArrayBuffer::New(env, bytes + offset);
  return Napi::Uint8Array::New(env, bytes, buf, offset);
}

}  // namespace runner_addon

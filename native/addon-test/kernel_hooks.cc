// The test addon (runner_native_test.node): hooks that run one named variant of one kernel on bytes
// JavaScript gives, a timing microbenchmark, and the sampler's generator parts, so that tests can
// hold every SIMD variant to its scalar reference and the generator to its documented algorithm.
// It links the same static engine as the product addon and, being a test harness, may include the
// engine's internal headers; the product addon (native/addon) includes runner.h only and ships none
// of this. Loaded by src/lib/engine/test-addon.ts. Every bad argument throws a JavaScript error with
// a `code` and a message naming the argument; nothing here can end the process or read or write
// outside the arrays it was given.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../addon/args.h"
#include "hooks.h"

extern "C" {
#include "quant/quant.h"
#include "sample/rng.h"
}

namespace {

using runner_addon::Kind;
using runner_addon::NewBytes;
using runner_addon::NumberText;
using runner_addon::RequireArgs;
using runner_addon::RequireBytes;
using runner_addon::RequireCount;
using runner_addon::RequireFloats;

[[noreturn]] void Throw(const Napi::Env& env, bool type_error, const char* code, const std::string& message) {
  runner_addon::Throw(env, type_error ? Kind::kTypeError : Kind::kError, code, message);
}

// A type as the product addon reads it, or "F16xF16" (the F16 KV cache's dot, not a weight type).
const runner_type_traits* RequireType(const Napi::Env& env, const Napi::Value& v, const char* fn) {
  if (v.IsString()) {
    std::string name = v.As<Napi::String>().Utf8Value();
    for (char& c : name) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    if (name == "F16XF16") return runner_kv_f16_traits();
  }
  return runner_type_traits_get(runner_addon::RequireType(env, v, fn).type);
}

// Bytes that n values of t take; refuses n that is not a multiple of the block size.
size_t RowBytes(const Napi::Env& env, const runner_type_traits* t, int64_t n, const std::string& where) {
  size_t bytes = 0;
  const int rc = runner_type_row_bytes(t, n, &bytes);
  if (rc == -1) {
    Throw(env, false, "KERNEL_BAD_ARGUMENT",
          where + " = " + std::to_string(n) + " is not a multiple of " + t->name + "'s block size " + std::to_string(t->block_size));
  }
  if (rc != 0) Throw(env, false, "KERNEL_BAD_ARGUMENT", where + " = " + std::to_string(n) + " is too large");
  return bytes;
}

enum class Slot { kVecDot, kVecDot2, kVecDotTile, kFromFloat };

bool Built(const runner_type_traits* t, Slot slot, int v) {
  switch (slot) {
    case Slot::kVecDot: return t->vec_dot[v] != nullptr;
    case Slot::kVecDot2: return t->vec_dot2[v] != nullptr;
    case Slot::kVecDotTile: return t->vec_dot_tile[v] != nullptr;
    case Slot::kFromFloat: return t->from_float[v] != nullptr;
  }
  return false;
}

// vec_dot2 needs what vec_dot of the same variant needs.
bool Usable(const runner_type_traits* t, Slot slot, runner_kernel_variant v, runner_cpu_mask cpu) {
  if (!Built(t, slot, v)) return false;
  return slot == Slot::kFromFloat ? runner_kernel_from_float_usable(t, v, cpu) != 0 : runner_kernel_vec_dot_usable(t, v, cpu) != 0;
}

const char* SlotName(Slot slot) {
  return slot == Slot::kVecDot ? "vec_dot" : slot == Slot::kVecDot2 ? "vec_dot2" : slot == Slot::kVecDotTile ? "vec_dot_tile" : "from_float";
}

runner_kernel_variant RequireVariant(const Napi::Env& env, const Napi::Value& v, const runner_type_traits* t, Slot slot, const char* fn) {
  const std::string where = std::string(fn) + ": variant";
  if (!v.IsString()) Throw(env, true, "KERNEL_BAD_ARGUMENT", where + " must be a string ('scalar', 'avx2' or 'avx512')");
  const std::string name = v.As<Napi::String>().Utf8Value();
  for (int i = 0; i < RUNNER_KERNEL_COUNT; ++i) {
    if (name != runner_kernel_variant_name(i)) continue;
    const auto variant = static_cast<runner_kernel_variant>(i);
    if (!Built(t, slot, i)) {
      Throw(env, false, "KERNEL_VARIANT_UNAVAILABLE", where + " '" + name + "': " + t->name + " has no " + SlotName(slot) + " of that variant in this build");
    }
    if (!Usable(t, slot, variant, runner_cpu_features())) {
      Throw(env, false, "KERNEL_VARIANT_UNAVAILABLE", where + " '" + name + "': this CPU lacks a feature " + t->name + "'s " + SlotName(slot) + " of that variant needs");
    }
    return variant;
  }
  Throw(env, false, "KERNEL_BAD_ARGUMENT", where + " '" + name + "' is not one of 'scalar', 'avx2', 'avx512'");
}

// The weight and activation rows of one vec_dot call, checked against n.
struct DotArgs {
  const runner_type_traits* t;
  runner_kernel_variant variant;
  runner_vec_dot_fn fn;
  int64_t n;
  const uint8_t* x;
  size_t x_len;
  size_t x_row;
  const uint8_t* y;
};

DotArgs RequireDotArgs(const Napi::CallbackInfo& info, const char* fn, bool rows) {
  Napi::Env env = info.Env();
  const std::string f(fn);
  const runner_type_traits* t = RequireType(env, info[0], fn);
  const runner_kernel_variant v = RequireVariant(env, info[1], t, Slot::kVecDot, fn);
  const int64_t n = RequireCount(env, info[2], f + ": n");
  const runner_type_traits* yt = runner_type_traits_get(t->vec_dot_type);
  if (!yt) Throw(env, false, "KERNEL_UNSUPPORTED_TYPE", f + ": " + t->name + "'s vec_dot_type is not implemented");
  const size_t x_bytes = RowBytes(env, t, n, f + ": n");
  const size_t y_bytes = RowBytes(env, yt, n, f + ": n");
  Napi::Uint8Array x = RequireBytes(env, info[3], f + ": x");
  Napi::Uint8Array y = RequireBytes(env, info[4], f + ": y");
  if (rows ? (x_bytes == 0 || x.ByteLength() == 0 || x.ByteLength() % x_bytes != 0) : x.ByteLength() != x_bytes) {
    Throw(env, false, "KERNEL_BAD_ARGUMENT",
          f + ": x has " + std::to_string(x.ByteLength()) + " bytes; " + std::to_string(n) + " values of " + t->name + " take " +
              std::to_string(x_bytes) + (rows ? " per row" : ""));
  }
  if (y.ByteLength() != y_bytes) {
    Throw(env, false, "KERNEL_BAD_ARGUMENT",
          f + ": y has " + std::to_string(y.ByteLength()) + " bytes; " + std::to_string(n) + " values of " + yt->name + " take " +
              std::to_string(y_bytes));
  }
  return DotArgs{t, v, t->vec_dot[v], n, x.Data(), x.ByteLength(), x_bytes, y.Data()};
}

// kernelVecDot(type, variant, n, x: Uint8Array, y: Uint8Array) -> number
Napi::Value KernelVecDot(const Napi::CallbackInfo& info) {
  RequireArgs(info, 5, "kernelVecDot(type, variant, n, x: Uint8Array, y: Uint8Array)");
  const DotArgs a = RequireDotArgs(info, "kernelVecDot", false);
  float s = 0.0f;
  a.fn(a.n, &s, a.x, a.y);
  return Napi::Number::New(info.Env(), s);
}

// kernelVecDot2(type, variant, n, x: Uint8Array, y: Uint8Array, bx?) -> [number, number]: rows x[0..)
// and x[bx..) (bx defaults to the row size; x must hold exactly bx + one row) through vec_dot2.
Napi::Value KernelVecDot2(const Napi::CallbackInfo& info) {
  RequireArgs(info, 5, "kernelVecDot2(type, variant, n, x: Uint8Array, y: Uint8Array, bx?)");
  Napi::Env env = info.Env();
  const runner_type_traits* t = RequireType(env, info[0], "kernelVecDot2");
  const runner_kernel_variant v = RequireVariant(env, info[1], t, Slot::kVecDot2, "kernelVecDot2");
  const int64_t n = RequireCount(env, info[2], "kernelVecDot2: n");
  const runner_type_traits* yt = runner_type_traits_get(t->vec_dot_type);
  if (!yt) Throw(env, false, "KERNEL_UNSUPPORTED_TYPE", std::string("kernelVecDot2: ") + t->name + "'s vec_dot_type is not implemented");
  const size_t row = RowBytes(env, t, n, "kernelVecDot2: n");
  const size_t y_bytes = RowBytes(env, yt, n, "kernelVecDot2: n");
  Napi::Uint8Array x = RequireBytes(env, info[3], "kernelVecDot2: x");
  Napi::Uint8Array y = RequireBytes(env, info[4], "kernelVecDot2: y");
  size_t bx = row;
  if (info.Length() > 5 && !info[5].IsUndefined()) {
    const int64_t b = RequireCount(env, info[5], "kernelVecDot2: bx");
    if (static_cast<size_t>(b) < row) Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelVecDot2: bx must be at least the row size " + std::to_string(row));
    bx = static_cast<size_t>(b);
  }
  if (x.ByteLength() != bx + row) {
    Throw(env, false, "KERNEL_BAD_ARGUMENT",
          "kernelVecDot2: x has " + std::to_string(x.ByteLength()) + " bytes; two rows " + std::to_string(bx) + " bytes apart take " + std::to_string(bx + row));
  }
  if (y.ByteLength() != y_bytes) {
    Throw(env, false, "KERNEL_BAD_ARGUMENT",
          "kernelVecDot2: y has " + std::to_string(y.ByteLength()) + " bytes; " + std::to_string(n) + " values of " + yt->name + " take " + std::to_string(y_bytes));
  }
  float s[2] = {0.0f, 0.0f};
  t->vec_dot2[v](n, s, x.Data(), bx, y.Data());
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::Number::New(env, s[0]));
  out.Set(1u, Napi::Number::New(env, s[1]));
  return out;
}

// kernelVecDotTile(type, variant, n, x: Uint8Array, y: Uint8Array, cols?) -> [dot(x_r, y_c) at R*c + r]: the
// variant's R weight rows back to back in x, its C activation rows (vec_dot_type) back to back in y,
// through vec_dot_tile (after packing y as the tile's tile_pack says, where it has one); with cols
// below C, through vec_dot_tile_few on that many activation rows.
Napi::Value KernelVecDotTile(const Napi::CallbackInfo& info) {
  RequireArgs(info, 5, "kernelVecDotTile(type, variant, n, x: Uint8Array, y: Uint8Array)");
  Napi::Env env = info.Env();
  const runner_type_traits* t = RequireType(env, info[0], "kernelVecDotTile");
  const runner_kernel_variant v = RequireVariant(env, info[1], t, Slot::kVecDotTile, "kernelVecDotTile");
  const int64_t n = RequireCount(env, info[2], "kernelVecDotTile: n");
  const runner_type_traits* yt = runner_type_traits_get(t->vec_dot_type);
  if (!yt) Throw(env, false, "KERNEL_UNSUPPORTED_TYPE", std::string("kernelVecDotTile: ") + t->name + "'s vec_dot_type is not implemented");
  const size_t rows = t->tile_rows[v];
  size_t cols = t->tile_cols[v];
  const bool few = info.Length() > 5 && !info[5].IsUndefined();
  if (few) {
    const int64_t c = RequireCount(env, info[5], "kernelVecDotTile: cols");
    if (!t->vec_dot_tile_few[v] || c < 1 || static_cast<size_t>(c) >= cols)
      Throw(env, false, "KERNEL_BAD_ARGUMENT", std::string("kernelVecDotTile: ") + t->name + " has no tile on " + std::to_string(c) + " activation rows");
    cols = static_cast<size_t>(c);
  }
  const size_t row = RowBytes(env, t, n, "kernelVecDotTile: n");
  const size_t y_row = RowBytes(env, yt, n, "kernelVecDotTile: n");
  Napi::Uint8Array x = RequireBytes(env, info[3], "kernelVecDotTile: x");
  Napi::Uint8Array y = RequireBytes(env, info[4], "kernelVecDotTile: y");
  if (x.ByteLength() != rows * row)
    Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelVecDotTile: x must hold " + std::to_string(rows) + " rows, " + std::to_string(rows * row) + " bytes");
  if (y.ByteLength() != cols * y_row)
    Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelVecDotTile: y must hold " + std::to_string(cols) + " activation rows, " + std::to_string(cols * y_row) + " bytes");
  float s[RUNNER_TILE_MAX] = {0.0f};
  const runner_act_pack* pack = t->tile_pack[v];
  if (pack) {
    // the layout the engine's prepare step writes, each row packed on its own
    const size_t packed_row = pack->bytes(n);
    std::vector<uint8_t> packed(cols * packed_row + 1);
    for (size_t c = 0; c < cols; c++) pack->pack(y.Data() + c * y_row, packed.data() + c * packed_row, n);
    if (few) t->vec_dot_tile_few[v](n, s, x.Data(), row, packed.data(), packed_row, static_cast<int>(cols));
    else t->vec_dot_tile[v](n, s, x.Data(), row, packed.data(), packed_row);
  } else if (few) {
    t->vec_dot_tile_few[v](n, s, x.Data(), row, y.Data(), y_row, static_cast<int>(cols));
  } else {
    t->vec_dot_tile[v](n, s, x.Data(), row, y.Data(), y_row);
  }
  Napi::Array out = Napi::Array::New(env, rows * cols);
  for (uint32_t i = 0; i < rows * cols; i++) out.Set(i, Napi::Number::New(env, s[i]));
  return out;
}

// kernelBenchVecDot(type, variant, n, x: Uint8Array (one or more rows), y: Uint8Array, iters, rowsPerCall = 1)
//   -> nanoseconds per row, running `iters` rows of x in turn (so a large x measures streaming from
//   memory and a one-row x the kernel from cache). rowsPerCall 2 instead runs runner_vec_dot_rows over
//   all rows of x per pass (vec_dot2 on rows i and i + rows/2 where the variant has it), rounding
//   iters up to whole passes.
Napi::Value KernelBenchVecDot(const Napi::CallbackInfo& info) {
  RequireArgs(info, 6, "kernelBenchVecDot(type, variant, n, x: Uint8Array, y: Uint8Array, iters, rowsPerCall?)");
  Napi::Env env = info.Env();
  const DotArgs a = RequireDotArgs(info, "kernelBenchVecDot", true);
  const int64_t iters = RequireCount(env, info[5], "kernelBenchVecDot: iters");
  if (iters < 1) Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelBenchVecDot: iters must be at least 1");
  int64_t per_call = 1;
  if (info.Length() > 6 && !info[6].IsUndefined()) per_call = RequireCount(env, info[6], "kernelBenchVecDot: rowsPerCall");
  const size_t rows = a.x_len / a.x_row;
  if (per_call != 1 && (per_call != 2 || rows < 2)) {
    Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelBenchVecDot: rowsPerCall must be 1, or 2 with at least two rows in x");
  }
  volatile float sink = 0.0f;
  std::vector<float> out(rows);
  const auto start = std::chrono::steady_clock::now();
  size_t r = 0;
  int64_t done = 0;
  while (done < iters) {
    if (per_call == 2) {
      // All rows of x per pass, as a matvec would: runner_vec_dot_rows pairs row i with row i + rows/2.
      runner_vec_dot_rows(a.t, a.variant, a.n, out.data(), a.x, a.x_row, static_cast<int64_t>(rows), a.y);
      sink = sink + out[0];
      done += static_cast<int64_t>(rows);
      continue;
    }
    float s = 0.0f;
    a.fn(a.n, &s, a.x + r * a.x_row, a.y);
    sink = sink + s;
    done += 1;
    if (++r == rows) r = 0;
  }
  const auto stop = std::chrono::steady_clock::now();
  (void)sink;
  const double ns = std::chrono::duration<double, std::nano>(stop - start).count();
  return Napi::Number::New(env, ns / static_cast<double>(done));
}

// kernelFromFloat(type, variant, x: Float32Array, dstOffset = 0) -> Uint8Array (activation quantizer);
// the result is written dstOffset bytes into its buffer.
Napi::Value KernelFromFloat(const Napi::CallbackInfo& info) {
  RequireArgs(info, 3, "kernelFromFloat(type, variant, x: Float32Array, dstOffset?)");
  Napi::Env env = info.Env();
  const runner_type_traits* t = RequireType(env, info[0], "kernelFromFloat");
  const runner_kernel_variant v = RequireVariant(env, info[1], t, Slot::kFromFloat, "kernelFromFloat");
  Napi::Float32Array x = RequireFloats(env, info[2], "kernelFromFloat: x");
  size_t offset = 0;
  if (info.Length() > 3 && !info[3].IsUndefined()) {
    const int64_t o = RequireCount(env, info[3], "kernelFromFloat: dstOffset");
    if (o > 63) Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelFromFloat: dstOffset must be 0..63");
    offset = static_cast<size_t>(o);
  }
  const int64_t n = static_cast<int64_t>(x.ElementLength());
  const size_t bytes = RowBytes(env, t, n, "kernelFromFloat: x.length");
  Napi::Uint8Array out = NewBytes(env, bytes, offset);
  if (n > 0) t->from_float[v](x.Data(), out.Data(), n);
  return out;
}

// The variant an element-wise hook (kernelRoundF16) names: its index, or -1 when no
// variant has that name. The AVX2 ones need what the F16 AVX2 kernels need; refused where this CPU lacks it.
int ElementwiseVariant(const Napi::Env& env, const Napi::Value& value, const char* fn) {
  if (!value.IsString()) Throw(env, true, "KERNEL_BAD_ARGUMENT", std::string(fn) + ": variant must be a string");
  const std::string vname = value.As<Napi::String>().Utf8Value();
  int v = -1;
  for (int i = 0; i < RUNNER_KERNEL_COUNT; i++)
    if (vname == runner_kernel_variant_name(i)) v = i;
  if (v == RUNNER_KERNEL_AVX2 && !runner_kernel_vec_dot_usable(runner_type_traits_get(RUNNER_TYPE_F16), RUNNER_KERNEL_AVX2, runner_cpu_features()))
    Throw(env, false, "KERNEL_UNSUPPORTED_VARIANT", std::string(fn) + ": this CPU cannot run avx2");
  return v;
}

// kernelVecDotMv(type, variant, n, x: Uint8Array (two rows), y: Uint8Array) -> [x0.y, x1.y, x0.y]: the
// decode kernels on y packed by the variant's mv_pack: vec_dot2_mv on both rows, then vec_dot_mv on
// the first (test hook for their bitwise contract).
Napi::Value KernelVecDotMv(const Napi::CallbackInfo& info) {
  RequireArgs(info, 5, "kernelVecDotMv(type, variant, n, x: Uint8Array, y: Uint8Array)");
  Napi::Env env = info.Env();
  const runner_type_traits* t = RequireType(env, info[0], "kernelVecDotMv");
  const runner_kernel_variant v = RequireVariant(env, info[1], t, Slot::kVecDot, "kernelVecDotMv");
  if (!t->mv_pack[v] || !t->vec_dot_mv[v] || !t->vec_dot2_mv[v])
    Throw(env, false, "KERNEL_UNSUPPORTED_VARIANT", std::string("kernelVecDotMv: ") + t->name + " has no packed decode kernels in that variant");
  const int64_t n = RequireCount(env, info[2], "kernelVecDotMv: n");
  const runner_type_traits* yt = runner_type_traits_get(t->vec_dot_type);
  if (!yt) Throw(env, false, "KERNEL_UNSUPPORTED_TYPE", std::string("kernelVecDotMv: ") + t->name + "'s vec_dot_type is not implemented");
  const size_t row = RowBytes(env, t, n, "kernelVecDotMv: n");
  const size_t y_row = RowBytes(env, yt, n, "kernelVecDotMv: n");
  Napi::Uint8Array x = RequireBytes(env, info[3], "kernelVecDotMv: x");
  Napi::Uint8Array y = RequireBytes(env, info[4], "kernelVecDotMv: y");
  if (x.ByteLength() != 2 * row) Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelVecDotMv: x must hold two rows, " + std::to_string(2 * row) + " bytes");
  if (y.ByteLength() != y_row) Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelVecDotMv: y must hold one activation row, " + std::to_string(y_row) + " bytes");
  std::vector<uint8_t> packed(t->mv_pack[v]->bytes(n) + 1);
  t->mv_pack[v]->pack(y.Data(), packed.data(), n);
  float s[3] = {0.0f, 0.0f, 0.0f};
  t->vec_dot2_mv[v](n, s, x.Data(), row, packed.data());
  t->vec_dot_mv[v](n, &s[2], x.Data(), packed.data());
  Napi::Array out = Napi::Array::New(env, 3);
  for (uint32_t i = 0; i < 3; i++) out.Set(i, Napi::Number::New(env, s[i]));
  return out;
}

// kernelVecDotMvn(type, variant, n, x: Uint8Array (one row), y: Uint8Array (nc activation rows)) -> nc
// dots through vec_dot_mvn, each activation packed on its own by the variant's mv_pack (as the
// engine's prepare step writes them, a fixed stride apart).
Napi::Value KernelVecDotMvn(const Napi::CallbackInfo& info) {
  RequireArgs(info, 5, "kernelVecDotMvn(type, variant, n, x: Uint8Array, y: Uint8Array)");
  Napi::Env env = info.Env();
  const runner_type_traits* t = RequireType(env, info[0], "kernelVecDotMvn");
  const runner_kernel_variant v = RequireVariant(env, info[1], t, Slot::kVecDot, "kernelVecDotMvn");
  if (!t->mv_pack[v] || !t->vec_dot_mvn[v])
    Throw(env, false, "KERNEL_UNSUPPORTED_VARIANT", std::string("kernelVecDotMvn: ") + t->name + " has no few-token decode kernel in that variant");
  const int64_t n = RequireCount(env, info[2], "kernelVecDotMvn: n");
  const runner_type_traits* yt = runner_type_traits_get(t->vec_dot_type);
  if (!yt) Throw(env, false, "KERNEL_UNSUPPORTED_TYPE", std::string("kernelVecDotMvn: ") + t->name + "'s vec_dot_type is not implemented");
  const size_t row = RowBytes(env, t, n, "kernelVecDotMvn: n");
  const size_t y_row = RowBytes(env, yt, n, "kernelVecDotMvn: n");
  Napi::Uint8Array x = RequireBytes(env, info[3], "kernelVecDotMvn: x");
  Napi::Uint8Array y = RequireBytes(env, info[4], "kernelVecDotMvn: y");
  if (x.ByteLength() != row) Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelVecDotMvn: x must hold one row, " + std::to_string(row) + " bytes");
  const size_t nc = y_row ? y.ByteLength() / y_row : 0;
  if (nc < 1 || nc > RUNNER_MVN_MAX || nc * y_row != y.ByteLength())
    Throw(env, false, "KERNEL_BAD_ARGUMENT", "kernelVecDotMvn: y must hold 1 to " + std::to_string(RUNNER_MVN_MAX) + " activation rows of " + std::to_string(y_row) + " bytes");
  const size_t packed_row = (t->mv_pack[v]->bytes(n) + 63) & ~static_cast<size_t>(63);
  std::vector<uint8_t> packed(nc * packed_row + 1);
  for (size_t c = 0; c < nc; c++) t->mv_pack[v]->pack(y.Data() + c * y_row, packed.data() + c * packed_row, n);
  float s[RUNNER_MVN_MAX] = {0.0f};
  t->vec_dot_mvn[v](n, s, x.Data(), packed.data(), packed_row, static_cast<int>(nc));
  Napi::Array out = Napi::Array::New(env, nc);
  for (uint32_t i = 0; i < nc; i++) out.Set(i, Napi::Number::New(env, s[i]));
  return out;
}

// kernelRoundF16(variant, a, x: Float32Array) -> Float32Array: the float of the half nearest x[i] * a,
// through runner_round_f16's variant (test hook for its bitwise contract).
Napi::Value KernelRoundF16(const Napi::CallbackInfo& info) {
  RequireArgs(info, 3, "kernelRoundF16(variant, a, x: Float32Array)");
  Napi::Env env = info.Env();
  const int v = ElementwiseVariant(env, info[0], "kernelRoundF16");
  const runner_round_f16_fn fn = v < 0 ? nullptr : runner_round_f16_variant(static_cast<runner_kernel_variant>(v));
  if (!fn) Throw(env, false, "KERNEL_UNSUPPORTED_VARIANT", "kernelRoundF16: no " + info[0].As<Napi::String>().Utf8Value() + " variant");
  if (!info[1].IsNumber()) Throw(env, true, "KERNEL_BAD_ARGUMENT", "kernelRoundF16: a must be a number");
  const float a = info[1].As<Napi::Number>().FloatValue();
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    Throw(env, true, "KERNEL_BAD_ARGUMENT", "kernelRoundF16: x must be a Float32Array");
  Napi::Float32Array x = info[2].As<Napi::Float32Array>();
  Napi::Float32Array out = Napi::Float32Array::New(env, x.ElementLength());
  fn(static_cast<int64_t>(x.ElementLength()), a, x.Data(), out.Data());
  return out;
}

}  // namespace

void RegisterKernelHooks(Napi::Env env, Napi::Object exports) {
  exports.Set("kernelRoundF16", Napi::Function::New(env, KernelRoundF16, "kernelRoundF16"));
  exports.Set("kernelVecDotMv", Napi::Function::New(env, KernelVecDotMv, "kernelVecDotMv"));
  exports.Set("kernelVecDotMvn", Napi::Function::New(env, KernelVecDotMvn, "kernelVecDotMvn"));
  exports.Set("kernelVecDot", Napi::Function::New(env, KernelVecDot, "kernelVecDot"));
  exports.Set("kernelVecDot2", Napi::Function::New(env, KernelVecDot2, "kernelVecDot2"));
  exports.Set("kernelVecDotTile", Napi::Function::New(env, KernelVecDotTile, "kernelVecDotTile"));
  exports.Set("kernelBenchVecDot", Napi::Function::New(env, KernelBenchVecDot, "kernelBenchVecDot"));
  exports.Set("kernelFromFloat", Napi::Function::New(env, KernelFromFloat, "kernelFromFloat"));
}

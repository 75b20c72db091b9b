// The weight-type table's Node-API face (runner.h, "weight types"): the table as data and row
// conversion (quantizing weights as llama.cpp writes them, dequantizing). Synchronous: they serve
// scripts (make-test-model quantizes one chunk of rows per call), the quantizer's worker threads
// and tests, never a request path. Kernel test hooks live in the test addon (native/addon-test).
#include <string>

#include "args.h"
#include "bindings.h"

namespace runner_addon {
namespace {

Napi::Array VariantNames(const Napi::Env &env, uint32_t mask) {
  Napi::Array out = Napi::Array::New(env);
  uint32_t k = 0;
  for (int v = 0; v < RUNNER_KERNEL_COUNT; ++v)
    if (mask & (1u << v)) out.Set(k++, Napi::String::New(env, runner_kernel_variant_name(v)));
  return out;
}

Napi::Value VariantOrNull(const Napi::Env &env, int32_t v) {
  return v < 0 ? env.Null() : Napi::Value(Napi::String::New(env, runner_kernel_variant_name(v)));
}

// typeTraits() -> [{type, name, blockSize, typeSize, vecDotType, variants, vecDot2Variants, vecDotTiles,
//                   fromFloatVariants, hasQuantizeRef, pickedVecDot, pickedFromFloat}], in type-id
// order. Variant lists hold what this build has AND this CPU can run.
Napi::Value TypeTraits(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const int32_t count = runner_type_count();
  Napi::Array out = Napi::Array::New(env, static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    runner_type_info t{};
    if (runner_type_info_at(i, &t) != RUNNER_OK) throw StatusError(env, RUNNER_ERR_INTERNAL, "typeTraits: entry " + std::to_string(i) + " is missing");
    Napi::Object o = Napi::Object::New(env);
    o.Set("type", Napi::Number::New(env, t.type));
    o.Set("name", Napi::String::New(env, t.name));
    o.Set("blockSize", Napi::Number::New(env, static_cast<double>(t.block_size)));
    o.Set("typeSize", Napi::Number::New(env, static_cast<double>(t.type_size)));
    o.Set("vecDotType", Napi::Number::New(env, t.vec_dot_type));
    o.Set("variants", VariantNames(env, t.vec_dot_variants));
    o.Set("vecDot2Variants", VariantNames(env, t.vec_dot2_variants));
    Napi::Array tiles = Napi::Array::New(env);
    uint32_t k = 0;
    for (int v = 0; v < RUNNER_KERNEL_COUNT; ++v) {
      if (!(t.vec_dot_tile_variants & (1u << v))) continue;
      Napi::Object tile = Napi::Object::New(env);
      tile.Set("variant", Napi::String::New(env, runner_kernel_variant_name(v)));
      tile.Set("rows", Napi::Number::New(env, t.tile_rows[v]));
      tile.Set("cols", Napi::Number::New(env, t.tile_cols[v]));
      tiles.Set(k++, tile);
    }
    o.Set("vecDotTiles", tiles);
    o.Set("fromFloatVariants", VariantNames(env, t.from_float_variants));
    o.Set("hasQuantizeRef", Napi::Boolean::New(env, t.has_quantize_ref != 0));
    o.Set("pickedVecDot", VariantOrNull(env, t.picked_vec_dot));
    o.Set("pickedFromFloat", VariantOrNull(env, t.picked_from_float));
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

// quantizeRef(type, x: Float32Array) -> Uint8Array (weight quantizer, llama.cpp's bytes).
Napi::Value QuantizeRef(const Napi::CallbackInfo &info) {
  RequireArgs(info, 2, "quantizeRef(type, x: Float32Array)");
  Napi::Env env = info.Env();
  const runner_type_info t = RequireType(env, info[0], "quantizeRef");
  if (!t.has_quantize_ref) Throw(env, Kind::kError, "KERNEL_UNSUPPORTED_TYPE", std::string("quantizeRef: ") + t.name + " has no weight quantizer");
  Napi::Float32Array x = RequireFloats(env, info[1], "quantizeRef: x");
  const int64_t n = static_cast<int64_t>(x.ElementLength());
  const size_t bytes = RowBytes(env, t, n, "quantizeRef: x.length");
  Napi::Uint8Array out = NewBytes(env, bytes, 0);
  char err[256] = {0};
  const runner_status st = runner_quantize_row_ref(t.type, x.Data(), n, out.Data(), bytes, err, sizeof err);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  return out;
}

// toFloat(type, bytes: Uint8Array, n) -> Float32Array (dequantize).
Napi::Value ToFloat(const Napi::CallbackInfo &info) {
  RequireArgs(info, 3, "toFloat(type, bytes: Uint8Array, n)");
  Napi::Env env = info.Env();
  const runner_type_info t = RequireType(env, info[0], "toFloat");
  Napi::Uint8Array bytes = RequireBytes(env, info[1], "toFloat: bytes");
  const int64_t n = RequireCount(env, info[2], "toFloat: n");
  const size_t want = RowBytes(env, t, n, "toFloat: n");
  if (bytes.ByteLength() != want) {
    Throw(env, Kind::kError, "KERNEL_BAD_ARGUMENT",
          "toFloat: bytes has " + std::to_string(bytes.ByteLength()) + " bytes; " + std::to_string(n) + " values of " + t.name +
              " take " + std::to_string(want));
  }
  Napi::Float32Array out = Napi::Float32Array::New(env, static_cast<size_t>(n));
  char err[256] = {0};
  const runner_status st = runner_dequantize_row(t.type, bytes.Data(), want, n, out.Data(), err, sizeof err);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  return out;
}

// loraMergeRows(w: Float32Array, nIn, a: Float32Array, b: Float32Array, rank, alpha, scale): w += s * b a,
// in place (runner_lora_merge_rows; the quantizer's workers merge a chunk of rows per call).
Napi::Value LoraMergeRows(const Napi::CallbackInfo &info) {
  RequireArgs(info, 7, "loraMergeRows(w: Float32Array, nIn, a: Float32Array, b: Float32Array, rank, alpha, scale)");
  Napi::Env env = info.Env();
  Napi::Float32Array w = RequireFloats(env, info[0], "loraMergeRows: w");
  const int64_t n_in = RequireCount(env, info[1], "loraMergeRows: nIn");
  Napi::Float32Array a = RequireFloats(env, info[2], "loraMergeRows: a");
  Napi::Float32Array b = RequireFloats(env, info[3], "loraMergeRows: b");
  const int64_t rank = RequireCount(env, info[4], "loraMergeRows: rank");
  const double alpha = NumberArg(info[5], "loraMergeRows: alpha");
  const double scale = NumberArg(info[6], "loraMergeRows: scale");
  if (n_in < 1 || rank < 1 || w.ElementLength() % static_cast<size_t>(n_in) != 0 ||
      a.ElementLength() != static_cast<size_t>(rank * n_in) ||
      b.ElementLength() != (w.ElementLength() / static_cast<size_t>(n_in)) * static_cast<size_t>(rank)) {
    Throw(env, Kind::kError, "KERNEL_BAD_ARGUMENT",
          "loraMergeRows: w has " + std::to_string(w.ElementLength()) + " values, a " + std::to_string(a.ElementLength()) + ", b " +
              std::to_string(b.ElementLength()) + "; expected rows x " + std::to_string(n_in) + ", " + std::to_string(rank) + " x " +
              std::to_string(n_in) + " and rows x " + std::to_string(rank));
  }
  char err[256] = {0};
  const runner_status st = runner_lora_merge_rows(w.Data(), static_cast<int64_t>(w.ElementLength()) / n_in, n_in, a.Data(), b.Data(), rank,
                                                  static_cast<float>(alpha), static_cast<float>(scale), err, sizeof err);
  if (st != RUNNER_OK) throw StatusError(env, st, err);
  return env.Undefined();
}

}  // namespace

void RegisterTypeBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("typeTraits", Napi::Function::New(env, TypeTraits, "typeTraits"));
  exports.Set("quantizeRef", Napi::Function::New(env, QuantizeRef, "quantizeRef"));
  exports.Set("toFloat", Napi::Function::New(env, ToFloat, "toFloat"));
  exports.Set("loraMergeRows", Napi::Function::New(env, LoraMergeRows, "loraMergeRows"));
}

}  // namespace runner_addon

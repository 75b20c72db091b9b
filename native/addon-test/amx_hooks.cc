// The test addon's AMX hooks (native/src/quant/amx.h): the driver on a named tile ISA (the
// emulation, its deliberately wrong forms, or the hardware where this process may use it) and the
// self-check on one, so tests can hold the AMX algorithm to vec_dot bitwise on any AVX-512 CPU and
// show that the self-check refuses a wrong kernel. Loaded by src/lib/engine/test-addon.ts.
#include <napi.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "../addon/args.h"
#include "hooks.h"

extern "C" {
#include "quant/amx.h"
#include "quant/quant.h"
}

namespace {

using runner_addon::Kind;

[[noreturn]] void Fail(const Napi::Env& env, const std::string& message) {
  runner_addon::Throw(env, Kind::kError, "KERNEL_BAD_ARGUMENT", message);
}

const char* const kIsaNames[] = {"emulated", "emulated-unsigned", "emulated-saturating", "hardware"};

const runner_amx_isa* RequireIsa(const Napi::Env& env, const Napi::Value& v, const char* fn) {
  if (!v.IsString()) runner_addon::Throw(env, Kind::kTypeError, "KERNEL_BAD_ARGUMENT", std::string(fn) + ": isa must be a string");
  const std::string name = v.As<Napi::String>().Utf8Value();
  const runner_amx_isa* isa = runner_amx_isa_named(name.c_str());
  if (!isa) {
    runner_addon::Throw(env, Kind::kError, "KERNEL_VARIANT_UNAVAILABLE",
                        std::string(fn) + ": isa '" + name + "' cannot run in this process (kernelAmxIsas() lists those that can)");
  }
  return isa;
}

// kernelAmxIsas() -> the tile ISAs runner_amx_isa_named gives in this process.
Napi::Value KernelAmxIsas(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  uint32_t i = 0;
  for (const char* name : kIsaNames)
    if (runner_amx_isa_named(name)) out.Set(i++, Napi::String::New(env, name));
  return out;
}

// kernelAmxTile(type, isa, n, x: Uint8Array, y: Uint8Array, by?) -> {values, faults}: 16 weight rows
// of `type` (Q8_0 or Q4_0) back to back in x, 16 Q8_0 activation rows by bytes apart in y (default:
// back to back), packed and run as the matmul does; values[16 * c + r] = dot(row r, token c); faults:
// emulated instructions the hardware would have faulted on.
Napi::Value KernelAmxTile(const Napi::CallbackInfo& info) {
  runner_addon::RequireArgs(info, 5, "kernelAmxTile(type, isa, n, x: Uint8Array, y: Uint8Array, by?)");
  Napi::Env env = info.Env();
  const runner_type_traits* t = runner_type_traits_get(runner_addon::RequireType(env, info[0], "kernelAmxTile").type);
  const runner_amx_pack_fn pack = t ? runner_amx_pack_for(t->type) : nullptr;
  if (!pack) runner_addon::Throw(env, Kind::kError, "KERNEL_UNSUPPORTED_TYPE", "kernelAmxTile: the type has no AMX tile in this build");
  const runner_amx_isa* isa = RequireIsa(env, info[1], "kernelAmxTile");
  const int64_t n = runner_addon::RequireCount(env, info[2], "kernelAmxTile: n");
  size_t row = 0, y_row = 0;
  if (n == 0 || runner_type_row_bytes(t, n, &row) != 0 || runner_type_row_bytes(runner_type_traits_get(RUNNER_TYPE_Q8_0), n, &y_row) != 0)
    Fail(env, "kernelAmxTile: n = " + std::to_string(n) + " is not a positive multiple of 32");
  Napi::Uint8Array x = runner_addon::RequireBytes(env, info[3], "kernelAmxTile: x");
  Napi::Uint8Array y = runner_addon::RequireBytes(env, info[4], "kernelAmxTile: y");
  size_t by = y_row;
  if (info.Length() > 5 && !info[5].IsUndefined()) {
    by = static_cast<size_t>(runner_addon::RequireCount(env, info[5], "kernelAmxTile: by"));
    if (by < y_row) Fail(env, "kernelAmxTile: by must be at least the row size " + std::to_string(y_row));
  }
  if (x.ByteLength() != RUNNER_AMX_ROWS * row) Fail(env, "kernelAmxTile: x must hold 16 rows, " + std::to_string(RUNNER_AMX_ROWS * row) + " bytes");
  if (y.ByteLength() != (RUNNER_AMX_TOKENS - 1) * by + y_row)
    Fail(env, "kernelAmxTile: y must hold 16 activation rows " + std::to_string(by) + " bytes apart, " +
                  std::to_string((RUNNER_AMX_TOKENS - 1) * by + y_row) + " bytes");
  const size_t ws_bytes = runner_amx_workspace_bytes(n);
  std::unique_ptr<void, decltype(&std::free)> ws(std::aligned_alloc(64, ws_bytes), &std::free);
  if (!ws) runner_addon::Throw(env, Kind::kError, "ENGINE_NO_MEMORY", "kernelAmxTile: no memory for the workspace");
  float s[RUNNER_AMX_TOKENS * RUNNER_AMX_ROWS];
  const uint64_t faults = runner_amx_emulated_faults();
  pack(n, x.Data(), row, ws.get());
  runner_amx_tile(isa, n, ws.get(), y.Data(), by, s, RUNNER_AMX_ROWS);
  Napi::Array values = Napi::Array::New(env, RUNNER_AMX_TOKENS * RUNNER_AMX_ROWS);
  for (uint32_t i = 0; i < RUNNER_AMX_TOKENS * RUNNER_AMX_ROWS; i++) values.Set(i, Napi::Number::New(env, s[i]));
  Napi::Object out = Napi::Object::New(env);
  out.Set("values", values);
  out.Set("faults", Napi::Number::New(env, static_cast<double>(runner_amx_emulated_faults() - faults)));
  return out;
}

// kernelAmxSelfCheck(isa) -> whether the engine's self-check passes on that ISA (the one it runs
// once per process before it uses AMX), against the vec_dot variants this CPU (not capped) picks.
Napi::Value KernelAmxSelfCheck(const Napi::CallbackInfo& info) {
  runner_addon::RequireArgs(info, 1, "kernelAmxSelfCheck(isa)");
  const runner_amx_isa* isa = RequireIsa(info.Env(), info[0], "kernelAmxSelfCheck");
  return Napi::Boolean::New(info.Env(), runner_amx_selfcheck(isa, runner_cpu_features()) != 0);
}

}  // namespace

void RegisterAmxHooks(Napi::Env env, Napi::Object exports) {
  exports.Set("kernelAmxIsas", Napi::Function::New(env, KernelAmxIsas, "kernelAmxIsas"));
  exports.Set("kernelAmxTile", Napi::Function::New(env, KernelAmxTile, "kernelAmxTile"));
  exports.Set("kernelAmxSelfCheck", Napi::Function::New(env, KernelAmxSelfCheck, "kernelAmxSelfCheck"));
}

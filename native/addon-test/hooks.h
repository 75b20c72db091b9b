// The test addon's areas (native/addon-test): each registers its hooks from its own file.
#pragma once
#include <napi.h>

// kernel_hooks.cc: one named variant of one kernel on given bytes, and the vec_dot microbenchmark.
void RegisterKernelHooks(Napi::Env env, Napi::Object exports);
// amx_hooks.cc: the AMX driver on a named tile ISA (emulated, wrong on purpose, hardware) and its self-check.
void RegisterAmxHooks(Napi::Env env, Napi::Object exports);
// sampler_hooks.cc: the sampler's generator parts.
void RegisterSamplerHooks(Napi::Env env, Napi::Object exports);

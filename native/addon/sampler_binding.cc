#include "bindings.h"

namespace runner_addon {
void RegisterSamplerBindings(Napi::Env, Napi::Object) {}
}  // namespace runner_addon

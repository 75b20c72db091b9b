#include "bindings.h"

namespace runner_addon {
void RegisterKernelsBindings(Napi::Env, Napi::Object) {}
}  // namespace runner_addon

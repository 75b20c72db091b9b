#include "bindings.h"

namespace runner_addon {
void RegisterEngineBindings(Napi::Env, Napi::Object) {}
}  // namespace runner_addon

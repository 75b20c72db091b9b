// The model config across the seam: read from JavaScript by walking runner.h's field table
// (runner_model_config_fields), and the table itself for the test that TypeScript agrees. No field
// is named here.
#include <cstring>
#include <string>

#include "args.h"
#include "bindings.h"

namespace runner_addon {

ConfigArg ReadConfig(const Napi::Env &env, const Napi::Object &c) {
  int32_t count = 0;
  const runner_config_field *fields = runner_model_config_fields(&count);
  auto find = [&](const std::string &name) -> const runner_config_field * {
    for (int32_t i = 0; i < count; i++)
      if (name == fields[i].name) return &fields[i];
    return nullptr;
  };
  Napi::Array keys = c.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); i++) {
    const std::string key = keys.Get(i).ToString().Utf8Value();
    if (!find(key)) ThrowInvalid(env, Kind::kTypeError, "config." + key + " is not a model config field (runner.h RUNNER_MODEL_CONFIG_FIELDS)");
  }
  ConfigArg out;
  char *base = reinterpret_cast<char *>(&out.cfg);
  // Scalars first: the flag arrays are checked against n_layer.
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t i = 0; i < count; i++) {
      const runner_config_field &f = fields[i];
      if ((f.kind == RUNNER_CFG_LAYER_FLAGS) != (pass == 1)) continue;
      const std::string what = std::string("config.") + f.name;
      Napi::Value v = c.Get(f.name);
      if (v.IsUndefined()) {
        if (f.required) ThrowInvalid(env, Kind::kTypeError, what + " is missing (a required field)");
        continue;  // OPTIONAL: 0 or NULL, "not set"
      }
      if (f.kind == RUNNER_CFG_I32) {
        const int32_t x = Int32Arg(v, what);
        std::memcpy(base + f.offset, &x, sizeof x);
      } else if (f.kind == RUNNER_CFG_F32) {
        const float x = static_cast<float>(NumberArg(v, what));  // the engine refuses non-finite values by name
        std::memcpy(base + f.offset, &x, sizeof x);
      } else {
        if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
          ThrowInvalid(env, Kind::kTypeError, what + " must be a Uint8Array");
        Napi::Uint8Array a = v.As<Napi::Uint8Array>();
        // An n_layer out of range is the engine's to refuse by name; the flags then stay NULL.
        if (out.cfg.n_layer < 1 || out.cfg.n_layer > RUNNER_MAX_LAYERS) continue;
        if (a.ElementLength() != static_cast<size_t>(out.cfg.n_layer))
          ThrowInvalid(env, Kind::kRangeError, what + " must hold one flag per layer (" + std::to_string(out.cfg.n_layer) + "), got " +
                                                   std::to_string(a.ElementLength()));
        out.flags.emplace_back(f.offset, std::vector<uint8_t>(a.Data(), a.Data() + a.ElementLength()));
      }
    }
  }
  return out;
}

namespace {

// modelConfigFields() -> [{name, kind, presence, offset, doc}] in runner.h's order.
Napi::Value ModelConfigFields(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int32_t count = 0;
  const runner_config_field *fields = runner_model_config_fields(&count);
  Napi::Array out = Napi::Array::New(env, static_cast<size_t>(count));
  for (int32_t i = 0; i < count; i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", fields[i].name);
    o.Set("kind", fields[i].kind_name);
    o.Set("presence", fields[i].required ? "REQUIRED" : "OPTIONAL");
    o.Set("offset", fields[i].offset);
    o.Set("doc", fields[i].doc);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

// modelConfigEnums() -> [{field, name, value, doc}] in runner.h's order.
Napi::Value ModelConfigEnums(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int32_t count = 0;
  const runner_config_enum_value *values = runner_model_config_enum_values(&count);
  Napi::Array out = Napi::Array::New(env, static_cast<size_t>(count));
  for (int32_t i = 0; i < count; i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("field", values[i].field);
    o.Set("name", values[i].name);
    o.Set("value", values[i].value);
    o.Set("doc", values[i].doc);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

}  // namespace

void RegisterConfigBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("modelConfigFields", Napi::Function::New(env, ModelConfigFields, "modelConfigFields"));
  exports.Set("modelConfigEnums", Napi::Function::New(env, ModelConfigEnums, "modelConfigEnums"));
}

}  // namespace runner_addon

// A stack's settings in config.json, read with the table's rules (hf_architectures.hpp's
// `setting`: the key, its fallback, Transformers' default) and every value's source named
// in messages. Shared by the reader (hf_checkpoint.cpp) and the rows whose config chooses
// their tensors (hf_architectures.cpp's by_config rules).
#ifndef EGELU_SRC_CHECKPOINTS_CONFIG_SETTINGS_HPP
#define EGELU_SRC_CHECKPOINTS_CONFIG_SETTINGS_HPP

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

namespace egelu {
namespace hf {

// A config key, the key whose value it takes when absent (T5's num_decoder_layers takes
// num_layers'), and Transformers' default when both are absent (null: none, the key is
// required). A null value in the config counts as absent (Gemma's hidden_activation).
struct setting {
  std::string key;
  std::string fallback;
  nlohmann::json otherwise;
};

// A required key; a key with Transformers' default; a key falling back on another.
inline setting key(const std::string& name) { return setting{name, "", nullptr}; }
inline setting key(const std::string& name, nlohmann::json otherwise) {
  return setting{name, "", std::move(otherwise)};
}
inline setting key_or(const std::string& name, const std::string& fallback) { return setting{name, fallback, nullptr}; }
// A value fixed in the modeling code, with no config key (Whisper's LayerNorm eps).
inline setting fixed(nlohmann::json value) { return setting{"", "", std::move(value)}; }

// A stack's settings: its section of config.json, named for messages ("config.json" or
// "config.json's text_config").
class settings {
 public:
  using json = nlohmann::json;

  settings(const json& section, std::string where) : section_(section), where_(std::move(where)) {}
  settings(json&&, std::string) = delete;  // (it keeps a reference to the section)

  const std::string& where() const { return where_; }

  // The setting's value and where it came from ("config.json's \"d_ff\"", "Transformers'
  // default, config.json has no \"rms_norm_eps\""), or a failure naming the key.
  json value(const setting& s, std::string* source = nullptr) const {
    if (const json* v = present(s.key)) return said(*v, quoted(s.key), source);
    if (const json* v = present(s.fallback)) {
      return said(*v, quoted(s.fallback) + " (it has no " + quoted(s.key) + ")", source);
    }
    if (!s.otherwise.is_null()) {
      const std::string from = s.key.empty() ? "a value fixed in Transformers' code"
                                             : "Transformers' default (" + where_ + " has no " + quoted(s.key) + ")";
      if (source) *source = from;
      return s.otherwise;
    }
    throw std::invalid_argument(where_ + " has no " + quoted(s.key));
  }
  bool has(const std::string& key) const { return present(key) != nullptr; }
  // Whether the key is there and null (None), which some settings read otherwise than absent.
  bool null(const std::string& key) const {
    const json* v = find(key);
    return v && v->is_null();
  }

  long long integer(const setting& s, std::string* source = nullptr, long long least = 1) const {
    std::string from;
    const json v = value(s, &from);
    if (!v.is_number_integer() || v.get<long long>() < least) {
      throw std::invalid_argument(from + " is " + v.dump() + ", not an integer of at least " + std::to_string(least));
    }
    if (source) *source = from;
    return v.get<long long>();
  }
  double number(const setting& s, std::string* source = nullptr) const {
    std::string from;
    const json v = value(s, &from);
    if (!v.is_number() || !(v.get<double>() > 0))
      throw std::invalid_argument(from + " is " + v.dump() + ", not a positive number");
    if (source) *source = from;
    return v.get<double>();
  }
  std::string string(const setting& s, std::string* source = nullptr) const {
    std::string from;
    const json v = value(s, &from);
    if (!v.is_string()) throw std::invalid_argument(from + " is " + v.dump() + ", not a string");
    if (source) *source = from;
    return v.get<std::string>();
  }
  bool boolean(const setting& s) const {
    std::string from;
    const json v = value(s, &from);
    if (!v.is_boolean()) throw std::invalid_argument(from + " is " + v.dump() + ", not true or false");
    return v.get<bool>();
  }

 private:
  // The key's value, or null; a dotted key ("ffn_config.moe_top_k") is a key of an object in the
  // section (DBRX's sub-configs): absent when the object is absent or null (its class's defaults),
  // refused when it is not an object.
  const json* find(const std::string& key) const {
    if (key.empty()) return nullptr;
    const json* in = &section_;
    std::size_t from = 0;
    for (std::size_t dot = key.find('.'); dot != std::string::npos; from = dot + 1, dot = key.find('.', from)) {
      const auto it = in->find(key.substr(from, dot - from));
      if (it == in->end() || it->is_null()) return nullptr;
      if (!it->is_object()) {
        throw std::invalid_argument(where_ + "'s " + quoted(key.substr(0, dot)) + " is " + it->dump() +
                                    ", not an object");
      }
      in = &*it;
    }
    const auto it = in->find(key.substr(from));
    return it == in->end() ? nullptr : &*it;
  }
  // A key counts when present and not null (a null is what save_pretrained writes for None).
  const json* present(const std::string& key) const {
    const json* v = find(key);
    return v && !v->is_null() ? v : nullptr;
  }
  std::string quoted(const std::string& key) const { return "\"" + key + "\""; }
  json said(const json& v, const std::string& key, std::string* source) const {
    if (source) *source = where_ + "'s " + key;
    return v;
  }

  const json& section_;
  std::string where_;
};

}  // namespace hf
}  // namespace egelu

#endif  // EGELU_SRC_CHECKPOINTS_CONFIG_SETTINGS_HPP

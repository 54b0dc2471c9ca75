// SPDX-License-Identifier: MIT
#include "composer/json_schema_lite.h"

#include <regex>

namespace etb::compose {
namespace {
using nlohmann::json;

bool hasType(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

std::string brief(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  std::string check(const json& v, const json& s, const std::string& at) {
    if (s.contains("$ref")) return check(v, resolve(s["$ref"].get<std::string>()), at);
    const std::string where = at.empty() ? "/" : at;
    if (s.contains("type")) {
      const std::string type = s["type"].get<std::string>();
      if (!hasType(v, type)) return where + ": must be " + article(type) + ", got " + brief(v);
    }
    if (s.contains("enum")) {
      bool found = false;
      for (const json& e : s["enum"]) found = found || e == v;
      if (!found) return where + ": must be one of " + s["enum"].dump() + ", got " + brief(v);
    }
    if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>()) {
      return where + ": must be >= " + s["minimum"].dump() + ", got " + brief(v);
    }
    if (s.contains("pattern") && v.is_string() &&
        !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>()))) {
      return where + ": " + brief(v) + " does not match " + s["pattern"].dump() +
             (s.contains("description") ? " (" + s["description"].get<std::string>() + ")" : "");
    }
    if (v.is_array()) return checkArray(v, s, at);
    if (v.is_object()) return checkObject(v, s, at);
    return "";
  }

 private:
  static std::string article(const std::string& type) {
    return (type == "object" || type == "array" || type == "integer" ? "an " : "a ") + type;
  }

  const json& resolve(const std::string& ref) {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) == 0 && root_.contains("$defs") && root_["$defs"].contains(ref.substr(prefix.size()))) {
      return root_["$defs"][ref.substr(prefix.size())];
    }
    static const json kAny = json::object();
    return kAny;
  }

  std::string checkArray(const json& v, const json& s, const std::string& at) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) {
      return (at.empty() ? "/" : at) + ": needs at least " + s["minItems"].dump() + " item(s)";
    }
    if (!s.contains("items")) return "";
    for (size_t i = 0; i < v.size(); ++i) {
      std::string e = check(v[i], s["items"], at + "/" + std::to_string(i));
      if (!e.empty()) return e;
    }
    return "";
  }

  std::string checkObject(const json& v, const json& s, const std::string& at) {
    const std::string where = at.empty() ? "/" : at;
    if (s.contains("minProperties") && v.size() < s["minProperties"].get<size_t>()) {
      return where + ": needs at least " + s["minProperties"].dump() + " key(s)";
    }
    if (s.contains("maxProperties") && v.size() > s["maxProperties"].get<size_t>()) {
      return where + ": takes at most " + s["maxProperties"].dump() + " key(s), got " +
             std::to_string(v.size()) + " (one step per list item)";
    }
    if (s.contains("required")) {
      for (const json& r : s["required"]) {
        if (!v.contains(r.get<std::string>())) return where + ": missing required key " + r.dump();
      }
    }
    const json props = s.value("properties", json::object());
    for (const auto& [key, val] : v.items()) {
      if (props.contains(key)) {
        std::string e = check(val, props[key], at + "/" + key);
        if (!e.empty()) return e;
      } else if (s.contains("additionalProperties")) {
        const json& extra = s["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) {
          std::string known;
          for (const auto& [k, unused] : props.items()) known += (known.empty() ? "" : ", ") + k;
          return where + ": unknown key \"" + key + "\" (known: " + known + ")";
        }
        if (extra.is_object()) {
          std::string e = check(val, extra, at + "/" + key);
          if (!e.empty()) return e;
        }
      }
    }
    return "";
  }

  const json& root_;
};
}  // namespace

std::string validateJson(const json& value, const json& schema) {
  return Validator(schema).check(value, schema, "");
}

}  // namespace etb::compose

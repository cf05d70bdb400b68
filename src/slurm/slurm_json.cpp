#include "slurm/slurm_json.h"

namespace llmwatch {

std::string slurm_json_error(const nlohmann::json& doc, const char* key) {
  if (doc.is_discarded()) return "not valid JSON";
  if (!doc.is_object() || !doc.contains(key) || !doc[key].is_array())
    return std::string("no \"") + key + "\" list in the JSON";
  // With slurmctld down, 22.05 exits 0 and prints an empty list plus an error entry:
  // that is "cannot tell", never "nothing there".
  if (auto errors = doc.find("errors");
      errors != doc.end() && errors->is_array() && !errors->empty()) {
    const auto& e = (*errors)[0];
    std::string what = e.is_object() ? e.value("description", "") : "";
    if (e.is_object() && e.contains("source")) what += " (" + e.value("source", "") + ")";
    return "Slurm reported an error: " + (what.empty() ? std::string("unspecified") : what);
  }
  return "";
}

std::string json_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  return {};
}

std::optional<std::int64_t> json_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number()) return static_cast<std::int64_t>(it->get<double>());
  if (it->is_object()) {
    auto set = it->find("set");
    auto number = it->find("number");
    if (set != it->end() && set->is_boolean() && !set->get<bool>()) return std::nullopt;
    if (number != it->end() && number->is_number()) return number->get<std::int64_t>();
  }
  return std::nullopt;
}

}  // namespace llmwatch

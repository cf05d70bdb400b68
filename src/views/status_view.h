#pragma once
// `llmwatch status`: reads the state store only (views never act). build_status() is the
// documented JSON schema ("llmwatch.status/1"); render_status() draws it for a terminal.
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"

namespace llmwatch {

class Store;

nlohmann::json build_status(const Config& config, Store& store, double now);
std::string render_status(const nlohmann::json& status, bool color);

// `status --check`, the Nagios convention, so anyone's monitoring can watch llmwatch itself:
// 0 all well, 1 a warning firing, 2 something critical firing, 3 not supervising (stale or
// never ran). `line` is the plugin's first line of output.
struct StatusCheck {
  int code = 3;
  std::string line;
};
StatusCheck check_status(const nlohmann::json& status);

}  // namespace llmwatch

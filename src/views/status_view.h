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

}  // namespace llmwatch

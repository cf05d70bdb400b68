#pragma once
// What every Slurm --json document shares: the list under `key`, an `errors` list that
// must be empty (22.05 exits 0 with an empty list and an error when slurmctld is down), and
// fields whose shape changed between versions.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace llmwatch {

// "" when `doc` is a usable document holding a `key` list; otherwise why not.
std::string slurm_json_error(const nlohmann::json& doc, const char* key);
// A string field; for a list (newer Slurm), its first string; "" when absent.
std::string json_string(const nlohmann::json& j, const char* key);
// An integer field, plain (22.05) or {"set": true, "number": N} (23.02+).
std::optional<std::int64_t> json_number(const nlohmann::json& j, const char* key);

}  // namespace llmwatch

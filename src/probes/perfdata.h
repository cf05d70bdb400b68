#pragma once
// Nagios performance data, the part of a plugin's first line after '|':
// "'label'=value[UOM];[warn];[crit];[min];[max] label2=..." (Nagios plugin guidelines). A check
// that measures a node (a GEMM's GFLOP/s, a memory bandwidth) reports its figure this way, and
// llmwatch judges it against the fleet's. Only the label and the value are kept.
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace llmwatch {

// label -> value. A label is kept as printed (quotes removed, at most 64 printable ASCII
// bytes); a value that is not a finite number ("U", "", "1e999") is dropped, never zero.
std::map<std::string, double> parse_perfdata(std::string_view text);
// The figures as JSON keeps them ({"gflops": 512}): an entry that is not a finite number is
// dropped; anything but an object is no figures. Never throws.
std::map<std::string, double> figures_from_json(const nlohmann::json& j);

}  // namespace llmwatch

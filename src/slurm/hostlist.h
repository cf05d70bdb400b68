#pragma once
// Slurm hostlists: "node-[1-3,5]", "gpu[001-128]", "rack[1-2]-n[01-04]", "a,b[1-2],c".
// Expansion is Slurm-compatible (zero padding follows the range's written width; several
// bracket groups expand as a product, leftmost slowest). Compression groups by prefix and
// padding and merges consecutive numbers.
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace llmwatch {

// Fails on malformed input ("node[1-", "node[3-1]", "node[]", "[a-b]"), saying why.
Result<std::vector<std::string>> expand_hostlist(std::string_view list);
// The hosts of `list`, or none when it is malformed (for callers that only iterate).
std::vector<std::string> hosts_in(std::string_view list);
std::string compress_hostlist(const std::vector<std::string>& hosts);

}  // namespace llmwatch

#pragma once
// Quota tools' outputs, parsed: Lustre `lfs quota`, GPFS `mmlsquota`, BeeGFS
// `beegfs-ctl --getquota`, Linux `quota -w`, or a custom command with a regex.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmwatch {

struct QuotaReport {
  std::uint64_t used_bytes = 0, limit_bytes = 0;  // limit 0: none
  std::uint64_t used_files = 0, limit_files = 0;
  bool over = false;  // the tool marked it over quota ('*')
  std::string grace;  // "6d23h59m", "none", "" when not shown
  std::string error;  // set when the output could not be understood
  bool ok() const { return error.empty(); }
};

// kind: lfs | mmlsquota | beegfs | quota | custom (custom_regex: groups used, limit).
QuotaReport parse_quota(const std::string& kind, std::string_view text,
                        const std::string& custom_regex = "");

}  // namespace llmwatch

#include "probes/proc_status.h"

#include "util/strings.h"

namespace llmwatch {

std::string_view proc_status_value(std::string_view status, std::string_view key) {
  for (std::size_t at = 0; at < status.size();) {
    std::size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    std::string_view line = status.substr(at, end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':')
      return trim(line.substr(key.size() + 1));
    at = end + 1;
  }
  return {};
}

}  // namespace llmwatch

#include "config/staged_action.h"

namespace llmwatch {

std::optional<StagedAction> parse_staged_action(const std::string& text, std::string* error) {
  size_t plus = text.find('+');
  if (plus == std::string::npos) return StagedAction{text, Seconds(0)};
  auto delay = parse_duration(text.substr(plus + 1), error);
  if (!delay) return std::nullopt;
  return StagedAction{text.substr(0, plus), *delay};
}

}  // namespace llmwatch

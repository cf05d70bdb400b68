#include "config/staged_action.h"

namespace llmwatch {

Result<StagedAction> parse_staged_action(const std::string& text) {
  size_t plus = text.find('+');
  if (plus == std::string::npos) return StagedAction{text, Seconds(0)};
  auto delay = parse_duration(text.substr(plus + 1));
  if (!delay) return Error{delay.error()};
  return StagedAction{text.substr(0, plus), *delay};
}

}  // namespace llmwatch

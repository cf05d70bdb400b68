#pragma once
// An escalation step: "cancel" runs as soon as its finding fires, "cancel+10m" only once the
// finding has been firing for 10 minutes. That is how a job's on_hang list escalates:
// ["alert", "save", "kill+5m", "cancel+15m", "restart+15m"] asks for a checkpoint, then a
// graceful exit, and cancels only if neither worked.
#include <string>

#include "util/units.h"

namespace llmwatch {

struct StagedAction {
  std::string action;
  Seconds delay{0};
};

// Fails when the delay part is not a duration.
Result<StagedAction> parse_staged_action(const std::string& text);

}  // namespace llmwatch

#include "rules/pending_reason.h"

#include <array>
#include <string_view>

namespace llmwatch {

PendingClass classify_pending_reason(const std::string& reason) {
  // Reasons that never clear on their own. Everything else (Priority, Resources,
  // Dependency, JobArrayTaskLimit, BeginTime, QOS*Limit, ReqNodeNotAvail...) waits normally.
  // A failed launch ("launch failed requeued held") is a finding of its own, judged before
  // (rules/launch_failure.h).
  static constexpr std::array<std::string_view, 10> kStuck = {
      "DependencyNeverSatisfied", "JobHeldAdmin",  "JobHeldUser",
      "BadConstraints",           "PartitionDown", "PartitionInactive",
      "InvalidAccount",           "InvalidQOS",    "AccountNotAllowed",
      "PartitionConfig"};
  for (auto s : kStuck)
    if (reason == s) return PendingClass::Stuck;
  return PendingClass::Normal;
}

}  // namespace llmwatch

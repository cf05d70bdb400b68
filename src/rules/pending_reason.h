#pragma once
// Whether a PENDING job will start by itself (Priority, Resources, ...) or needs a human
// (JobHeldAdmin, DependencyNeverSatisfied, ...). A failed launch is judged apart
// (rules/launch_failure.h).
#include <string>

namespace llmwatch {

enum class PendingClass { Normal, Stuck };

PendingClass classify_pending_reason(const std::string& reason);

}  // namespace llmwatch

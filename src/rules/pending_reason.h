#pragma once
// Whether a PENDING job will start by itself (Priority, Resources, ...) or needs a human
// (JobHeldAdmin, DependencyNeverSatisfied, launch failed requeued held, ...).
#include <string>

namespace llmwatch {

enum class PendingClass { Normal, Stuck };

PendingClass classify_pending_reason(const std::string& reason);

}  // namespace llmwatch

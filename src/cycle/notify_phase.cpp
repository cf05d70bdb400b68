#include "alert/notifier.h"
#include "cycle/phases.h"
#include "store/store.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// Told at a lesser severity than it fires at now, within the same episode: a disk from 85 % to
// 97 %, a crash the run seemed to survive and then died of. The alert action tells a finding
// once per episode, so without this the worse news waited for the next repeat (6 hours). A
// finding told before its severity was kept ("") is not told again; nor is one gone unknown.
bool worse_than_told(const FindingRow& row) {
  if (row.notified_at <= 0 || row.notified_severity.empty() || row.severity == "unknown")
    return false;
  return severity_rank(severity_from_name(row.severity)) >
         severity_rank(severity_from_name(row.notified_severity));
}

}  // namespace

void notify_phase(CycleState& s) {
  double repeat = static_cast<double>(s.config.alert_repeat_every.count());
  for (const auto& row : s.store.firing()) {
    std::string summary;
    if (worse_than_told(row))
      summary = "now " + row.severity + " (was " + row.notified_severity + "): " + row.summary;
    else if (row.notified_at > 0 && s.now - row.notified_at >= repeat)
      summary = "still firing after " +
                format_duration(Seconds(static_cast<long long>(s.now - row.first_seen))) + ": " +
                row.summary;
    else
      continue;
    queue_alert(s.config, s.store, message_for(row, "firing", summary, s.now), s.now);
    s.store.set_notified(row.key, s.now, row.severity);
  }
  // A deposed supervisor leaves the queue to the lease holder, which sends each alert once.
  if (s.fenced().empty()) flush_deliveries(s.config, s.store, s.now);
}

}  // namespace llmwatch

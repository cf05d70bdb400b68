#include "alert/notifier.h"
#include "cycle/phases.h"
#include "store/store.h"
#include "util/units.h"

namespace llmwatch {

void notify_phase(CycleState& s) {
  double repeat = static_cast<double>(s.config.alert_repeat_every.count());
  for (const auto& row : s.store.firing()) {
    if (row.notified_at <= 0 || s.now - row.notified_at < repeat) continue;
    std::string summary = "still firing after " +
                          format_duration(Seconds(static_cast<long long>(s.now - row.first_seen))) +
                          ": " + row.summary;
    queue_alert(s.config, s.store, message_for(row, "firing", summary, s.now), s.now);
    s.store.set_notified(row.key, s.now);
  }
  // A deposed supervisor leaves the queue to the lease holder, which sends each alert once.
  if (s.fenced().empty()) flush_deliveries(s.config, s.store, s.now);
}

}  // namespace llmwatch

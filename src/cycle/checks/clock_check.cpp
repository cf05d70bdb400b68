// The host clock (rules/clock_rule.h says why): reads this cycle's clocks, judges them
// against the last cycle's reading, and leaves the verdict for the job-log check.
#include <time.h>

#include "cycle/check.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/files.h"
#include "util/paths.h"
#include "util/strings.h"
#include "util/timespec.h"

namespace llmwatch {
namespace {

double boottime() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return seconds_of(ts);
}

class ClockCheck : public Check {
 public:
  std::string name() const override { return "clock"; }
  int stage() const override { return 0; }
  void prepare(CycleState& s) override {
    has_previous_ = ClockReading::from_json(s.store.get(kv::kClock).value_or(""), &previous_);
  }
  CheckReport judge(CycleState& s) override {
    ClockReading now;
    now.host = hostname();
    now.boot_id = std::string(trim(read_text_file("/proc/sys/kernel/random/boot_id").value_or("")));
    now.wall = s.now;
    now.boot = boottime();
    s.clock = judge_clock(has_previous_ ? &previous_ : nullptr, now,
                          static_cast<double>(s.config.interval.count()));
    s.clock_reading = now;
    CheckReport r;
    r.scopes.push_back("clock/");
    if (!s.clock.trusted)
      r.findings.push_back(make_finding("clock", "llmwatch", "untrusted", Severity::Info,
                                        s.clock.why + "; idle times were not measured across it"));
    return r;
  }

 private:
  ClockReading previous_;
  bool has_previous_ = false;
};

LLMWATCH_REGISTER_CHECK(ClockCheck);

}  // namespace
}  // namespace llmwatch

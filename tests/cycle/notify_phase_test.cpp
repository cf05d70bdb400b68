// The notify phase alone: a finding that keeps firing is told again once per repeat interval,
// and only the lease holder sends what is queued.
#include <gtest/gtest.h>

#include "cycle/phases.h"
#include "phase_fixture.h"
#include "store/alert_journal.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;

constexpr double kNow = 1'700'000'600;
const std::string kChannel =
    "[[alert.exec]]\nname = \"pager\"\nmin_severity = \"info\"\ncommand = [\"/bin/true\"]\n";

double notified_at(PhaseFixture& p, const std::string& key) {
  for (const auto& r : p.store->firing())
    if (r.key == key) return r.notified_at;
  return -1;
}

struct Firing : PhaseFixture {
  Firing() : PhaseFixture(kChannel, "alert_repeat_every = \"1h\"\n") {
    (void)store->observe(make_finding("job:tr", "tr", "hung", Severity::Critical, "stuck"), kNow);
    store->set_notified("job:tr/hung", kNow);
  }
};

TEST(NotifyPhase, AFindingStillFiringIsToldAgainOncePerRepeatInterval) {
  Firing p;
  AlertJournal journal(*p.store);
  {
    auto s = p.state(kNow + 1800);
    notify_phase(s);
  }
  EXPECT_EQ(notified_at(p, "job:tr/hung"), kNow);
  EXPECT_EQ(journal.sent_count("job:tr/hung"), 0);
  auto s = p.state(kNow + 3700);
  notify_phase(s);
  EXPECT_EQ(notified_at(p, "job:tr/hung"), kNow + 3700);
  EXPECT_EQ(journal.sent_count("job:tr/hung"), 1);
}

TEST(NotifyPhase, ADeposedSupervisorQueuesButLeavesTheSendingToTheLeaseHolder) {
  Firing p;
  AlertJournal journal(*p.store);
  auto s = p.state(kNow + 3700);
  s.fence = [] { return std::string("the lease expired"); };
  notify_phase(s);
  EXPECT_EQ(journal.sent_count("job:tr/hung"), 0);
  EXPECT_EQ(journal.pending_count(), 1);
}

}  // namespace
}  // namespace llmwatch

// The notify phase alone: a finding that keeps firing is told again once per repeat interval,
// and only the lease holder sends what is queued.
#include <gtest/gtest.h>

#include "cycle/phases.h"
#include "phase_fixture.h"
#include "store/alert_journal.h"
#include "store_test_access.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;

using testing::kNow;
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
    store->set_notified("job:tr/hung", kNow, "critical");
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

// A finding that gets worse within its episode (a disk from 85 % to 97 %) is told again at
// once, at its new severity: the alert action tells a finding once per episode, and the worse
// news used to wait for the repeat (6 hours by default). Once: better, then worse again, is not
// told again; nor is a finding told before its severity was kept.
TEST(NotifyPhase, AFindingThatGetsWorseIsToldAgainAtOnce) {
  PhaseFixture p(kChannel, "alert_repeat_every = \"6h\"\n");
  AlertJournal journal(*p.store);
  const std::string key = "storage:/ckpt/space";
  auto fires = [&](Severity sev, double at) {
    (void)p.store->observe(make_finding("storage:/ckpt", "storage:/ckpt", "space", sev, "97% used"),
                           at);
    auto s = p.state(at);
    notify_phase(s);
  };
  (void)p.store->observe(
      make_finding("storage:/ckpt", "storage:/ckpt", "space", Severity::Warning, "85% used"), kNow);
  p.store->set_notified(key, kNow, "warning");  // as the alert action tells it
  fires(Severity::Warning, kNow + 60);
  EXPECT_EQ(journal.sent_count(key), 0);
  fires(Severity::Critical, kNow + 120);
  EXPECT_EQ(journal.sent_count(key), 1) << "the worse news waited for the repeat";
  auto told = StoreTestAccess::db(*p.store).prepare(
      "SELECT message FROM deliveries WHERE alert_key LIKE ?");
  told.bind(1, key + "%");
  ASSERT_TRUE(told.step());
  EXPECT_NE(told.text(0).find("now critical (was warning): 97% used"), std::string::npos)
      << told.text(0);
  fires(Severity::Critical, kNow + 180);
  fires(Severity::Warning, kNow + 240);
  fires(Severity::Critical, kNow + 300);
  EXPECT_EQ(journal.sent_count(key), 1);
  // Told before the severity was kept (a store from before this): not told again.
  const std::string old = "storage:/old/space";
  (void)p.store->observe(
      make_finding("storage:/old", "storage:/old", "space", Severity::Warning, "85%"), kNow);
  p.store->set_notified(old, kNow, "");
  (void)p.store->observe(
      make_finding("storage:/old", "storage:/old", "space", Severity::Critical, "97%"), kNow + 60);
  auto s = p.state(kNow + 60);
  notify_phase(s);
  EXPECT_EQ(journal.sent_count(old), 0);
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

// `status` must never show stale data as current, and `status --check` follows Nagios.
#include "views/status_view.h"

#include <gtest/gtest.h>

#include "rules/job_progress.h"
#include "store/keys.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

struct State {
  testing::TempDir dir;
  Config config;
  std::unique_ptr<Store> store;
  State() {
    config.state_dir = dir / "state";
    config.interval = Seconds(30);
    store = std::make_unique<Store>(config.state_dir);
  }
  void cycled_at(double ts) {
    store->put("heartbeat", "{\"ts\":" + std::to_string(ts) + ",\"host\":\"node-3\"}", ts);
  }
  // A cycle 5 s before `now` saw the watched job "mytrain" with these queue entries (JSON).
  void watches_mytrain(const std::string& entries, double now) {
    cycled_at(now - 5);
    JobSettings job;
    job.name = "mytrain";
    config.jobs = {job};
    store->put(kv::job_view("mytrain"), R"({"entries":)" + entries + "}", now);
  }
};

// The defect: after llmwatch stopped, status still printed the job as RUNNING and the
// finding as firing, with "next 14m52s ago", and nothing said supervision had stopped.
TEST(StatusView, AStaleStatusOpensWithABannerAndDatesEverySection) {
  State st;
  double now = 1'800'000'000;
  st.cycled_at(now - 15 * 60);
  // The daemon that ran it died: its lease is left behind, expired.
  testing::write_file(st.config.state_dir + "/lease",
                      "node-3 4242 " + std::to_string(now - 14 * 60) + " 1\n");
  auto s = build_status(st.config, *st.store, now);
  EXPECT_FALSE(s["llmwatch"]["supervising"].get<bool>());
  std::string text = render_status(s, false);
  EXPECT_EQ(text.rfind("NOT SUPERVISING — last cycle 15m ago on node-3 (interval 30s)\n", 0), 0u)
      << text;
  EXPECT_NE(text.find("Jobs (as of 15m ago)"), std::string::npos) << text;
  EXPECT_NE(text.find("Firing (as of 15m ago)"), std::string::npos) << text;
  EXPECT_NE(text.find("next overdue by 14m30s"), std::string::npos) << text;
  EXPECT_EQ(check_status(s).code, 3);
  EXPECT_EQ(check_status(s).line.rfind("LLMWATCH UNKNOWN - not supervising", 0), 0u);
  // Never ran at all: also not supervising.
  State fresh;
  EXPECT_EQ(check_status(build_status(fresh.config, *fresh.store, now)).code, 3);
}

// A lone `run --once` (no daemon, no chain, its lease given back) promises no next cycle
// (#27: "next in 2s").
TEST(StatusView, ALoneRunPromisesNoNextCycle) {
  State st;
  double now = 1'800'000'000;
  st.cycled_at(now - 5);
  auto s = build_status(st.config, *st.store, now);
  EXPECT_FALSE(s["llmwatch"].contains("next_cycle_in_s"));
  EXPECT_NE(render_status(s, false).find("5s ago on node-3; no next cycle scheduled"),
            std::string::npos)
      << render_status(s, false);
}

// A new task before its first step: its state, and no step glued to it (#27: "2 RUNNING/1000").
TEST(StatusView, ANewTaskBeforeItsFirstStepReadsApart) {
  State st;
  double now = 1'800'000'000;
  st.watches_mytrain(R"([{"id":"2","nodes":"node-1","reason":"None","state":"RUNNING"}])", now);
  JobProgress p;
  p.task = "2";
  p.max_steps = 1000;  // printed by the task before this one
  st.store->put_progress("mytrain", std::move(p), now);
  std::string text = render_status(build_status(st.config, *st.store, now), false);
  EXPECT_EQ(text.find("RUNNING/1000"), std::string::npos) << text;
  EXPECT_NE(text.find("mytrain  2 RUNNING  no step yet (of 1000)"), std::string::npos) << text;
}

// A task that waits says why, as squeue does: before, a run Slurm held after a failed launch
// read "3 PENDING" and nothing more.
TEST(StatusView, AWaitingTaskSaysWhy) {
  State st;
  double now = 1'800'000'000;
  st.watches_mytrain(
      R"([{"id":"3","nodes":"","reason":"launch failed requeued held","state":"PENDING"}])", now);
  std::string text = render_status(build_status(st.config, *st.store, now), false);
  EXPECT_NE(text.find("mytrain  3 PENDING (launch failed requeued held)"), std::string::npos)
      << text;
}

TEST(StatusView, CheckFollowsNagios) {
  State st;
  double now = 1'800'000'000;
  st.cycled_at(now - 10);
  auto s = build_status(st.config, *st.store, now);
  EXPECT_TRUE(s["llmwatch"]["supervising"].get<bool>());
  EXPECT_EQ(render_status(s, false).find("NOT SUPERVISING"), std::string::npos);
  EXPECT_EQ(check_status(s).code, 0);
  EXPECT_EQ(check_status(s).line, "LLMWATCH OK - 0 job(s) watched, nothing firing");
  st.store->observe(make_finding("job:tr", "tr", "stuck", Severity::Warning, "pending"), now);
  EXPECT_EQ(check_status(build_status(st.config, *st.store, now)).code, 1);
  st.store->observe(make_finding("job:tr", "tr", "hung", Severity::Critical, "no step"), now);
  auto c = check_status(build_status(st.config, *st.store, now));
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(c.line.rfind("LLMWATCH CRITICAL - 1 critical, 1 warning firing; ", 0), 0u) << c.line;
}

}  // namespace
}  // namespace llmwatch

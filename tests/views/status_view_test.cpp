// `status` must never show stale data as current, and `status --check` follows Nagios.
#include "views/status_view.h"

#include <gtest/gtest.h>

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
};

// The defect: after llmwatch stopped, status still printed the job as RUNNING and the
// finding as firing, with "next 14m52s ago", and nothing said supervision had stopped.
TEST(StatusView, AStaleStatusOpensWithABannerAndDatesEverySection) {
  State st;
  double now = 1'800'000'000;
  st.cycled_at(now - 15 * 60);
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

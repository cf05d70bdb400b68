// The self chain through whole cycles of the real Supervisor against a FakeSlurm: the check
// finds a chain without a successor (or with several), and the successor action mends it,
// journaled, dry-run aware, and announced, as every action is.
#include <gtest/gtest.h>

#include "cycle/supervisor.h"
#include "fake_slurm.h"
#include "store/keys.h"
#include "store/store.h"
#include "store_reading.h"
#include "test_util.h"
#include "util/identity.h"

namespace llmwatch {
namespace {

struct Chain {
  testing::TempDir dir;
  testing::FakeSlurm slurm;
  Config config;
  std::unique_ptr<Store> store;
  explicit Chain(const std::string& extra = "") {
    auto loaded = load_config_string(
        "[llmwatch]\nstate_dir = \"" + dir / "state" + "\"\nresolve_after_cycles = 1\n" + extra,
        "test.toml");
    if (!loaded.config) throw std::runtime_error("bad test config");
    config = *loaded.config;
    store = std::make_unique<Store>(config.state_dir);
    store->put(kv::kSelfChain, "on", 1);
  }
  void queued(std::int64_t id, const std::string& state = "PENDING") {
    SlurmJob j;
    j.job_id = id;
    j.name = config.self.job_name;
    j.user = current_user_name();
    j.state = state;
    slurm.jobs.push_back(j);
  }
  CycleResult cycle(double now) {
    store->put("clock", "", now);  // time is stepped by hand here, not a clock jump
    return Supervisor(config, *store, slurm).run_cycle(now);
  }
  bool firing(const std::string& key) { return testing::is_firing(*store, key); }
  std::string events() { return testing::event_lines(*store); }
};

TEST(SelfChainCheck, AMissingSuccessorIsAFindingThatTheSuccessorActionMends) {
  Chain c;
  c.cycle(1'700'000'000);
  ASSERT_EQ(c.slurm.submitted.size(), 1u);
  const auto& args = c.slurm.submitted[0];
  EXPECT_NE(std::find(args.begin(), args.end(), "--dependency=singleton"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "--job-name=" + c.config.self.job_name),
            args.end());
  EXPECT_TRUE(c.firing("llmwatch/successor-missing"));
  EXPECT_NE(c.events().find("successor done: re-queued the chain's next llmwatch job: 1001"),
            std::string::npos)
      << c.events();
  EXPECT_EQ(c.store->get(kv::kSelfSuccessor), "1001");
  // Slurm shows it queued: the chain is whole, the finding resolves, nothing more is queued.
  c.queued(1001);
  c.cycle(1'700'000'030);
  EXPECT_EQ(c.slurm.submitted.size(), 1u);
  EXPECT_FALSE(c.firing("llmwatch/successor-missing"));
}

TEST(SelfChainCheck, ASuccessorStillMissingIsQueuedAgainNextCycle) {
  Chain c;
  c.cycle(1'700'000'000);
  c.cycle(1'700'000'030);  // the first one vanished (cancelled by someone): queue again
  EXPECT_EQ(c.slurm.submitted.size(), 2u);
}

TEST(SelfChainCheck, DryRunQueuesNothingAndSaysSo) {
  Chain c("dry_run = true\n");
  c.cycle(1'700'000'000);
  EXPECT_TRUE(c.slurm.submitted.empty());
  EXPECT_NE(c.events().find("successor dry-run"), std::string::npos) << c.events();
}

TEST(SelfChainCheck, OfSeveralQueuedSuccessorsTheNewestIsKept) {
  Chain c;
  c.queued(41);
  c.queued(45);
  c.queued(43);
  c.cycle(1'700'000'000);
  EXPECT_EQ(c.slurm.cancelled, (std::vector<std::string>{"41", "43"}));
  EXPECT_TRUE(c.slurm.submitted.empty());
  EXPECT_EQ(c.store->get(kv::kSelfSuccessor), "45");
}

TEST(SelfChainCheck, AnotherRunningLlmwatchQueuesItsOwnSuccessor) {
  Chain c;
  c.queued(50, "RUNNING");
  c.cycle(1'700'000'000);
  EXPECT_TRUE(c.slurm.submitted.empty());
  EXPECT_TRUE(c.slurm.cancelled.empty());
  EXPECT_FALSE(c.firing("llmwatch/successor-missing"));
}

TEST(SelfChainCheck, AChainThatIsOffIsLeftAlone) {
  Chain c;
  c.store->put(kv::kSelfChain, "off", 2);
  c.cycle(1'700'000'000);
  EXPECT_TRUE(c.slurm.submitted.empty());
}

}  // namespace
}  // namespace llmwatch

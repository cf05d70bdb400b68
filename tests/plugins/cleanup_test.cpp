// The cleanup action through the executor, as the act phase runs it: journaled first, once
// per checkpoint; dry-run (the default, or [llmwatch] dry_run) only says what would go, and
// does not use up the checkpoint's key, so turning dry-run off later still deletes.
#include <gtest/gtest.h>

#include <filesystem>

#include "cycle/executor.h"
#include "fake_slurm.h"
#include "registry.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {
namespace fs = std::filesystem;

struct CleanupWorld {
  testing::TempDir dir, state;
  Store store{state.path};
  Config config;
  testing::FakeSlurm slurm;
  StorageSettings storage;
  CleanupWorld() {
    storage.path = dir.path;
    storage.keep_last = 2;
    for (const char* name : {"step-100", "step-200"}) {
      fs::create_directories(dir / name);
      testing::write_file(dir / name + "/model.pt", std::string(3000, 'x'));
    }
  }
  int run(const std::string& name, double now) {
    ActionRequest r;
    r.job = "storage:" + storage.path;
    r.storage = &storage;
    r.path = dir / name;
    r.finding = make_finding(r.job, r.job, "cleanup", Severity::Info, "keep_last 2");
    r.finding.evidence = {"2.9 KiB"};
    r.episode = now;
    return Executor(config, store, slurm, now).run_plan(r, {"cleanup"});
  }
  std::string events() {
    std::string out;
    for (const auto& e : store.events(0, "", 100)) out += e.message + "\n";
    return out;
  }
};

TEST(CleanupAction, DryRunSaysOnceThenARealRunDeletesOnce) {
  CleanupWorld w;
  ASSERT_NE(find_action("cleanup"), nullptr);
  EXPECT_EQ(w.run("step-100", 1), 1);  // cleanup_dry_run = true: the default
  EXPECT_EQ(w.run("step-100", 2), 0);  // said once
  EXPECT_TRUE(fs::exists(w.dir / "step-100"));
  EXPECT_NE(w.events().find("cleanup dry-run: would delete " + (w.dir / "step-100")),
            std::string::npos)
      << w.events();
  w.config.dry_run = true;  // the whole of llmwatch in dry-run: nothing deleted (said already)
  w.storage.cleanup_dry_run = false;
  EXPECT_EQ(w.run("step-100", 3), 0);
  EXPECT_TRUE(fs::exists(w.dir / "step-100"));
  w.config.dry_run = false;
  EXPECT_EQ(w.run("step-100", 4), 1);  // dry-run keys did not use the checkpoint's up
  EXPECT_EQ(w.run("step-100", 5), 0);  // once
  EXPECT_FALSE(fs::exists(w.dir / "step-100"));
  EXPECT_TRUE(fs::exists(w.dir / "step-200"));
  EXPECT_NE(w.events().find("cleanup done: deleted old checkpoint " + (w.dir / "step-100") +
                            " (2.9 KiB)"),
            std::string::npos)
      << w.events();
}

}  // namespace
}  // namespace llmwatch

#include "probes/checkpoints.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cycle/housekeeping.h"
#include "rules/storage_rules.h"
#include "test_util.h"

namespace llmwatch {
namespace {
namespace fs = std::filesystem;

// Checkpoint directories step-100 .. step-400, an hour apart, plus one being written.
struct CheckpointDir {
  testing::TempDir dir;
  double now = 0;
  CheckpointDir() {
    auto base = fs::file_time_type::clock::now();
    now = std::chrono::duration<double>(std::chrono::file_clock::to_sys(base).time_since_epoch())
              .count();
    for (int i = 1; i <= 4; ++i) {
      std::string d = dir / ("step-" + std::to_string(i * 100));
      fs::create_directories(d);
      testing::write_file(d + "/model.pt", std::string(1000 * i, 'x'));
      auto t = base - std::chrono::hours(5 - i);
      fs::last_write_time(d + "/model.pt", t);
      fs::last_write_time(d, t);
    }
    fs::create_directories(dir / "step-500.tmp");
    testing::write_file(dir / "step-500.tmp/model.pt", "partial");
  }
};

TEST(Checkpoints, ScanSizesAgesAndWhatIsStillBeingWritten) {
  CheckpointDir c;
  auto scan = scan_checkpoints(c.dir.path, "step-*", c.now);
  ASSERT_TRUE(scan.ok()) << scan.error;
  ASSERT_EQ(scan.checkpoints.size(), 5u);
  EXPECT_EQ(fs::path(scan.checkpoints[0].path).filename(), "step-100");
  EXPECT_EQ(scan.checkpoints[3].bytes, 4000u);
  EXPECT_TRUE(scan.checkpoints[3].complete);
  EXPECT_FALSE(scan.checkpoints[4].complete);  // *.tmp, and just written
  EXPECT_FALSE(scan_checkpoints("/nonexistent/ckpt", "*", 0).ok());
}

TEST(Checkpoints, CleanupKeepsAtLeastTwoAndNeverTheOneBeingWritten) {
  CheckpointDir c;
  auto scan = scan_checkpoints(c.dir.path, "step-*", c.now);
  EXPECT_TRUE(cleanup_candidates(scan, 0).empty());   // off
  EXPECT_EQ(cleanup_candidates(scan, 1).size(), 2u);  // keep_last 1 still keeps 2
  auto doomed = cleanup_candidates(scan, 3);
  ASSERT_EQ(doomed.size(), 1u);
  EXPECT_EQ(fs::path(doomed[0].path).filename(), "step-100");
}

// The defect: a failed mtime read became 0, "oldest of all", so the newest checkpoint could
// be the one deleted. An unknown age makes the ordering unknown: nothing is deleted.
TEST(Checkpoints, AnUnreadableModificationTimeDeletesNothing) {
  CheckpointDir c;
  ASSERT_EQ(cleanup_candidates(scan_checkpoints(c.dir.path, "step-*", c.now), 2).size(), 2u);
  // An entry whose modification time cannot be read (a dangling link: stat fails).
  fs::create_symlink(c.dir / "gone", c.dir / "step-900");
  auto scan = scan_checkpoints(c.dir.path, "step-*", c.now);
  bool unknown_seen = false;
  for (const auto& k : scan.checkpoints) unknown_seen |= !k.mtime_known && !k.complete;
  EXPECT_TRUE(unknown_seen);
  EXPECT_TRUE(cleanup_candidates(scan, 2).empty());
}

TEST(Checkpoints, NextCheckpointThatWillNotFitAndTooFewComplete) {
  CheckpointDir c;
  auto scan = scan_checkpoints(c.dir.path, "step-*", c.now);
  StorageSettings s;
  s.path = "/ckpt";
  s.checkpoint_dir = c.dir.path;
  StorageObservation o;
  o.path = "/ckpt";
  o.total_bytes = 10000;
  o.free_bytes = 3000;  // the last checkpoint is 4000 bytes
  auto f = storage_figures(s, o, {});
  auto findings = evaluate_checkpoints(s, o, f, scan);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "checkpoint-wont-fit");
  EXPECT_EQ(findings[0].severity, Severity::Critical);
  o.free_bytes = 9000;
  EXPECT_TRUE(evaluate_checkpoints(s, o, storage_figures(s, o, {}), scan).empty());
  auto one = scan;
  one.checkpoints.erase(one.checkpoints.begin(), one.checkpoints.begin() + 3);
  findings = evaluate_checkpoints(s, o, storage_figures(s, o, {}), one);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "checkpoints-few");
}

TEST(Housekeeping, OwnOldJobLogsAreRemoved) {
  testing::TempDir state;
  fs::create_directories(state / "logs");
  testing::write_file(state / "logs/llmwatch-1.out", "old");
  testing::write_file(state / "logs/llmwatch-2.out", "new");
  testing::write_file(state / "logs/notes.txt", "not ours");
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(24 * 30);
  fs::last_write_time(state / "logs/llmwatch-1.out", old);
  fs::last_write_time(state / "logs/notes.txt", old);
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(remove_old_own_logs(state.path, Seconds(14 * 86400), now), 1);
  EXPECT_FALSE(fs::exists(state / "logs/llmwatch-1.out"));
  EXPECT_TRUE(fs::exists(state / "logs/llmwatch-2.out"));
  EXPECT_TRUE(fs::exists(state / "logs/notes.txt"));
}

}  // namespace
}  // namespace llmwatch

// The ledger's writes (#29): a steady run's looks wait in memory and are written with its
// state at most every kGoodputEvery; anything else is written at once; and a process that
// dies before it writes loses the ledger and the state alike, so its successor charges that
// time again and the sum stays exact.
#include "store/goodput_ledger.h"

#include <gtest/gtest.h>

#include "store/store.h"
#include "store_test_access.h"
#include "test_util.h"

namespace llmwatch {
namespace {

double allocated(Store& store) {
  double sum = 0;
  for (const auto& r : GoodputLedger(store).rows(0))
    if (r.bucket != "queue") sum += r.gpu_seconds;
  return sum;
}

// One look at a run training steadily: a step since the last look (step 0: not yet).
void look(Store& store, double now, std::int64_t step) {
  GoodputState state = store.goodput_state("train");
  GoodputLook l;
  l.now = now, l.task = "7@1", l.task_start = 1'800'000'000, l.gpus = 8;
  if (step > 0) {
    l.advanced = true, l.step = step, l.first_step = step, l.progress_at = now;
    l.first_step_at = now;
  }
  auto charges = account_goodput(state, l);
  store.record_goodput("train", state, charges, now);
}

TEST(GoodputLedgerWrites, SteadyLooksAreWrittenTogetherAndOthersAtOnce) {
  testing::TempDir dir;
  Store daemon(dir.path), reader(dir.path);  // the CLI reads what was written
  const double t0 = 1'800'000'000;
  look(daemon, t0, 0);  // a new task: written at once
  look(daemon, t0 + 30, 2);
  look(daemon, t0 + 60, 3);
  EXPECT_EQ(allocated(reader), 30 * 8) << "the first step's startup only";
  EXPECT_EQ(reader.goodput_state("train").at, t0 + 30);
  EXPECT_EQ(allocated(daemon), 60 * 8) << "the writer's own views see its pending looks";
  EXPECT_EQ(allocated(reader), 30 * 8) << "and reading them writes nothing";
  look(daemon, t0 + 90, 4);
  // A save is written at once.
  GoodputState state = daemon.goodput_state("train");
  GoodputLook save;
  save.now = t0 + 120, save.task = "7@1", save.gpus = 8, save.save_from = t0 + 100;
  daemon.record_goodput("train", state, account_goodput(state, save), t0 + 120);
  EXPECT_EQ(reader.goodput_state("train").at, t0 + 120);
  EXPECT_DOUBLE_EQ(allocated(reader) + reader.goodput_state("train").open_s, 120 * 8);
}

TEST(GoodputLedgerWrites, ADeadProcessLosesLedgerAndStateAlikeAndTheSumStaysExact) {
  testing::TempDir dir;
  const double t0 = 1'800'000'000;
  {
    // The daemon dies (SIGKILL) with four minutes of looks unwritten.
    Store daemon(dir.path);
    look(daemon, t0, 0);
    for (int i = 1; i <= 8; ++i) look(daemon, t0 + 30 * i, 1 + i);
    StoreTestAccess::die(daemon);
  }
  Store next(dir.path);
  EXPECT_EQ(next.goodput_state("train").at, t0 + 30) << "back where the ledger is";
  for (int i = 9; i <= 12; ++i) look(next, t0 + 30 * i, 1 + i);
  EXPECT_DOUBLE_EQ(allocated(next) + next.goodput_state("train").open_s, 360 * 8)
      << "every second since the start, once";
}

TEST(GoodputLedgerWrites, AFlushWritesWhatIsPending) {
  testing::TempDir dir;
  const double t0 = 1'800'000'000;
  {
    Store daemon(dir.path);
    look(daemon, t0, 0);
    look(daemon, t0 + 30, 2);
    look(daemon, t0 + 60, 3);
    daemon.flush_goodput();  // as the lease is released
  }
  Store next(dir.path);
  EXPECT_EQ(next.goodput_state("train").at, t0 + 60);
  EXPECT_DOUBLE_EQ(allocated(next), 60 * 8);
}

}  // namespace
}  // namespace llmwatch

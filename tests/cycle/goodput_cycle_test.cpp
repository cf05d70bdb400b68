// The goodput ledger through whole cycles of the real Supervisor (#29): a run starts, trains,
// hangs and is cancelled by llmwatch; the ledger holds its startup, productive and hang time,
// the buckets sum to the time the cycles saw, and `llmwatch job` and `goodput` agree on ETTR.
#include <gtest/gtest.h>

#include "ending_run.h"
#include "store/goodput_ledger.h"
#include "store_reading.h"
#include "views/goodput_view.h"
#include "views/job_view.h"

namespace llmwatch {
namespace {

using testing::EndingRun;
using testing::event_lines;
using testing::write_file;

// Task 7 starts at run.now (`gpus`: what Slurm allocated it, 0 none named), with an empty log,
// and a cycle sees it there.
void starts_now(EndingRun& run, int gpus = 0) {
  SlurmJob t = run.task("RUNNING");
  t.start_time = static_cast<std::int64_t>(run.now);
  t.gpus = gpus;
  run.slurm.jobs = {t};
  write_file(run.log, "");
  run.cycle(run.now);
}

TEST(GoodputCycle, ARunsStartupTrainingAndHangAreInTheLedgerAndTheViewsAgree) {
  EndingRun run("gpus = 8\nstale_after = \"2m\"\non_hang = [\"alert\"]\n");
  starts_now(run);  // started, no step
  double at = run.now;
  for (int i = 1; i <= 2; ++i) run.cycle(at += 30);  // 60 s of startup
  for (int i = 1; i <= 10; ++i) {                    // 5 min of steps
    write_file(run.log, "global_step: " + std::to_string(i) + "\n", true);
    run.cycle(at += 30);
  }
  for (int i = 1; i <= 8; ++i) run.cycle(at += 30);  // silent 4 min: hung after 2 min
  auto rows = GoodputLedger(*run.store).rows(0);
  auto t_all = goodput_totals(rows);
  EXPECT_NEAR(t_all.buckets["startup"], 60 * 8, 30 * 8 + 1) << event_lines(*run.store);
  EXPECT_GT(t_all.buckets["productive"], 240 * 8);
  EXPECT_GT(t_all.buckets["hang"], 0) << event_lines(*run.store);
  auto state = GoodputState::from_json(run.store->get("goodput:tr").value_or(""));
  EXPECT_DOUBLE_EQ(t_all.allocated + state.open_s, (at - run.now) * 8)
      << "the buckets sum to the time the cycles saw";
  auto h = job_history(run.config.jobs[0], *run.store, at, false);
  ASSERT_TRUE(h.contains("goodput"));
  EXPECT_DOUBLE_EQ(h["goodput"]["ettr"].get<double>(),
                   goodput_json(rows, "cause")["ettr"].get<double>());
}

// The GPUs are Slurm's allocation where Slurm names one (#29: AllocTRES' gres/gpu), over the
// [[job]]'s gpus: a run given 16 GPUs is charged 16 GPU-seconds a second, not the 8 its
// config says.
TEST(GoodputCycle, TheGpusAreSlurmsAllocationWhereItNamesOne) {
  EndingRun run("gpus = 8\n");
  starts_now(run, 16);
  double at = run.now;
  for (int i = 1; i <= 4; ++i) {
    write_file(run.log, "global_step: " + std::to_string(i) + "\n", true);
    run.cycle(at += 30);
  }
  GoodputState state = run.store->goodput_state("tr");
  EXPECT_DOUBLE_EQ(state.gpus, 16);
  auto t_all = goodput_totals(GoodputLedger(*run.store).rows(0));
  EXPECT_DOUBLE_EQ(t_all.allocated + state.open_s, (at - run.now) * 16);
}

// A wake between ticks replays the tick's squeue answer: it vouches for the tasks' states up to
// when it was asked, not up to the wake. Task 7 ended and its restart started after the tick; a
// wake 10 s later still shows 7 running. The next tick knows 7's end and 8's start, and the
// ledger splits the time there: 7's idle end up to its end, the queue up to 8's start, 8's
// startup from it. Before, the wake charged 7 up to the wake (GoodputTruth on the local
// cluster under load: a cancelled hang charged 1.3 s into the restart's startup and queue).
TEST(GoodputCycle, AWakeOnTheTicksSnapshotChargesOnlyTheTimeThatSnapshotVouchesFor) {
  EndingRun run("gpus = 4\n");
  starts_now(run);
  double at = run.now;
  for (int i = 1; i <= 3; ++i) {
    write_file(run.log, "global_step: " + std::to_string(i) + "\n", true);
    run.cycle(at += 10);
  }
  const double tick = at, ended = tick + 4, started = tick + 6;
  auto buckets = [&] {
    std::map<std::string, double> b;
    for (const auto& row : GoodputLedger(*run.store).rows(0)) b[row.bucket] += row.gpu_seconds;
    return b;
  };
  const double first_startup = buckets()["startup"];
  run.slurm.queue_age = 10;  // the wake: the tick's answer, 7 still running
  run.cycle(tick + 10);
  run.slurm.queue_age = 0;
  SlurmJob restart = run.task("RUNNING");
  restart.job_id = 8;
  restart.start_time = static_cast<std::int64_t>(started);
  run.slurm.jobs = {run.task("FAILED"), restart};
  run.shows_ended("FAILED");
  run.slurm.shown_jobs["7"]["EndTime"] = std::to_string(static_cast<std::int64_t>(ended));
  run.cycle(tick + 20);
  auto b = buckets();
  EXPECT_DOUBLE_EQ(b["idle end"], (ended - tick) * 4) << event_lines(*run.store);
  EXPECT_DOUBLE_EQ(b["queue"], (started - ended) * 4) << event_lines(*run.store);
  EXPECT_DOUBLE_EQ(b["startup"] - first_startup, (tick + 20 - started) * 4)
      << event_lines(*run.store);
}

}  // namespace
}  // namespace llmwatch

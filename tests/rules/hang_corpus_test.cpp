// The hang rule with the shipped defaults, replayed over a corpus of realistic log timelines
// (tests/fixtures/hang-corpus, made by make_corpus.py) on a simulated clock: the daemon reads
// the log every `interval`, as it does in production. No healthy timeline (15-minute saves,
// evaluation passes, a slow first step, data-loader stalls, chatty logging threads, irregular
// steps, errors a trainer survives) may be called hung; every hung one must be found within 2
// minutes of its last step (or finished save).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "cycle/hang_wake.h"
#include "probes/log_growth.h"
#include "rules/job_progress.h"
#include "test_util.h"

namespace llmwatch {
namespace {

struct Replay {
  bool hung = false;
  double found_at = 0, last_step_at = 0;
  std::string phase, how;
};

// As the daemon does: a read every `interval`, and a wake kWakePastDeadline past a job's deadline
// when that comes before the next tick (cycle/hang_wake.h). The file's mtime is the time of
// its last line read so far. The log's growth is sampled every `sample_every` between reads, as
// the daemon does (probes/log_growth.h; a line is a byte of the file here).
Replay replay(const std::string& path, const JobSettings& job, double interval,
              double sample_every) {
  std::vector<std::pair<double, std::string>> timeline;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto tab = line.find('\t');
    timeline.emplace_back(std::stod(line.substr(0, tab)), line.substr(tab + 1));
  }
  TrainingLogParser parser;
  JobProgress p;
  start_task(p, "1", path, 0, 0);
  Replay r;
  size_t next = 0;
  double mtime = 0, tick = interval;
  GrowthSeries growth;
  double sampled = 0;
  for (double now = interval; now <= timeline.back().first;) {
    for (; sample_every > 0 && sampled + sample_every <= now; sampled += sample_every) {
      size_t size = 0;
      while (size < timeline.size() && timeline[size].first <= sampled + sample_every) ++size;
      if (size > 0 && (growth.samples.empty() || size > growth.samples.back().size))
        growth.samples.push_back({size, timeline[size - 1].first});
    }
    const size_t batch_start = next;
    std::vector<std::string_view> batch;
    for (; next < timeline.size() && timeline[next].first <= now; ++next) {
      batch.push_back(timeline[next].second);
      mtime = timeline[next].first;
      // Progress was last due after a step, or after a save that finished.
      auto parsed = parser.parse(timeline[next].second);
      if (parsed.step || parsed.checkpoint_end) r.last_step_at = timeline[next].first;
    }
    const double before = p.last_progress;
    ProgressUpdate update(p, parser, now, evaluate_stale(p, job, now).allowance,
                          static_cast<double>(job.stale_memory.count()));
    auto clocked = update.feed(batch);
    update.finish(written_time(mtime, p.last_read, now),
                  clocked ? written_by(growth, 0, 0, batch_start + *clocked + 1) : 0);
    finish_read(p, before, now);
    auto v = evaluate_stale(p, job, now);
    if (v.hung) {
      r.hung = true;
      r.found_at = now;
      r.phase = v.phase;
      r.how = v.how;
      return r;
    }
    if (now >= tick) tick += interval;
    double wake = now + (v.allowance - v.idle) + kWakePastDeadline;
    now = v.allowance > 0 && wake < tick ? wake : tick;
  }
  return r;
}

// The hung timelines after a rank's fatal line (10 s steps): how soon each is found at most
// after its last step, and the words its finding says how by.
struct AfterFatalLine {
  const char* timeline;
  double bound;
  const char* words;
};
constexpr AfterFatalLine kAfterFatalLines[] = {
    // An NCCL error with no step after it: two step intervals (20 s), found at the first read
    // that sees the line (the replay reads every 30 s; the daemon's sampler brings that read to
    // 3 s after the line). It was the 45 s floor.
    {"hung-after-nccl-error.tl", 30.1, "after a nccl-error line"},
    // A sticky CUDA error 9 s after the last step: found 8 s after its write (17 s; 18 s when
    // counted from the read 1 s later), where two step intervals waited 20 s.
    {"hung-after-sticky-cuda-error.tl", 17.1,
     "after a cuda-error line its process cannot go on from"},
    // An NCCL error 3 s after the last step, and srun's word that the rank exited: 8 s after the
    // read's mtime, which a heartbeat 2 s after them moved on (13 s), where the error alone
    // waits two intervals (20 s).
    {"hung-after-nccl-error-rank-exited.tl", 13.1,
     "after a nccl-error line its process cannot go on from"},
    // NCCL's watchdog taking a rank's process down 8 s after the last step: found 8 s after its
    // write (16 s; 18 s from the read 2 s later), where an NCCL error waited 20 s.
    // The same under torchrun, whose agent says the worker failed (13 s; 20 s before).
    {"hung-after-nccl-error-torchrun-worker-failed.tl", 13.1,
     "after a nccl-error line its process cannot go on from"},
    {"hung-after-nccl-watchdog-abort.tl", 16.1,
     "after a nccl-error line its process cannot go on from"},
};

TEST(HangCorpus, TheShippedDefaultsFindEveryHangWithinTwoMinutesAndNoHealthyRun) {
  const double interval = static_cast<double>(Config{}.interval.count());
  EXPECT_EQ(interval, 30);
  const JobSettings defaults;
  int healthy = 0, hung = 0;
  double worst = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::fixture("hang-corpus"))) {
    if (e.path().extension() != ".tl") continue;
    std::string name = e.path().filename().string();
    // As the daemon runs: its logs' growth sampled every kLogSampleEvery between reads.
    Replay r =
        replay(e.path().string(), defaults, interval, static_cast<double>(kLogSampleEvery.count()));
    if (name.rfind("healthy-", 0) == 0) {
      ++healthy;
      EXPECT_FALSE(r.hung) << name << ": called hung at " << r.found_at << " s in phase " << r.phase
                           << " (last step at " << r.last_step_at << " s)";
    } else {
      ++hung;
      ASSERT_TRUE(r.hung) << name << ": never found";
      double delay = r.found_at - r.last_step_at;
      EXPECT_LE(delay, 120) << name << ": found " << delay << " s after the last step";
      // 10 s steps: the 45 s floor (4 x 10 s is under it), clocked at the log's write, woken at
      // the deadline (#30's target: 45 s; a wake one second past it made 46).
      // And under heartbeat lines: the last step is clocked at its own write, not at the
      // lines the hung rank printed after it in the same read (it was 70 s).
      // And two hours after a healthy 40 s hiccup, which the allowance remembers only for
      // stale_memory (it was 4 x that hiccup for the rest of the task).
      if (name == "hung-silent.tl" || name == "hung-in-collective.tl" ||
          name == "hung-hours-after-a-stall.tl") {
        EXPECT_LE(delay, 45.1) << name << ": found " << delay << " s after the last step";
      }
      // After a fatal line, how soon each timeline is found at most, and what the finding says.
      for (const auto& [timeline, bound, words] : kAfterFatalLines)
        if (name == timeline) {
          EXPECT_LE(delay, bound) << name << ": found " << delay << " s after the last step";
          EXPECT_NE(r.how.find(words), std::string::npos) << r.how;
        }
      worst = std::max(worst, delay);
      RecordProperty("detection_s_" + name, std::to_string(delay) + " (" + r.how + ")");
    }
  }
  EXPECT_GE(healthy, 15);
  EXPECT_GE(hung, 7);
  RecordProperty("worst_detection_s", std::to_string(worst));
}

// What stale_memory trades: a healthy 90 s gap that comes back every 40 minutes stays learned at
// the shipped hour, and a memory shorter than its return forgets it and calls the next one hung
// (a dump would then see it moving: a near miss, not a cancel). The timeline is on that edge.
TEST(HangCorpus, AMemoryShorterThanAGapsReturnForgetsIt) {
  const std::string timeline = testing::fixture("hang-corpus") + "/healthy-recurring-long-gaps.tl";
  const double interval = static_cast<double>(Config{}.interval.count());
  const double sample_every = static_cast<double>(kLogSampleEvery.count());
  JobSettings job;
  EXPECT_FALSE(replay(timeline, job, interval, sample_every).hung);
  job.stale_memory = Seconds(1200);
  Replay forgot = replay(timeline, job, interval, sample_every);
  EXPECT_TRUE(forgot.hung);
  EXPECT_EQ(forgot.how, "stale_floor; 4 x 10s longest step interval is less");
}

}  // namespace
}  // namespace llmwatch

// ProgressUpdate: a log read through a small buffer hands its lines on in batches; fed batch by
// batch, the progress must end as if the read had been applied whole.
#include "rules/job_progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "probes/training_log.h"

namespace llmwatch {
namespace {

JobProgress warmed_up() {
  JobProgress p;
  p.task = "7";
  p.step = 90;
  p.advances = 10;  // past the warm-up: the step interval counts
  p.last_progress = 1000;
  return p;
}

TEST(ProgressUpdate, FedInBatchesEndsAsAppliedWhole) {
  std::vector<std::string> text;
  for (int step = 91; step <= 130; ++step)
    text.push_back("reduced_train_loss: 2.3 | global_step: " + std::to_string(step) +
                   " | train_step_timing in s: 0.5");
  text.push_back("Saving checkpoint to /ckpt/step-130");
  text.push_back("RuntimeError: CUDA error: an illegal memory access was encountered");
  std::vector<std::string_view> lines(text.begin(), text.end());
  TrainingLogParser parser;

  JobProgress whole = warmed_up();
  auto whole_advances = apply_lines(whole, lines, parser, 1030);

  for (size_t cut : {size_t{1}, size_t{7}, size_t{20}, lines.size() - 1}) {
    JobProgress fed = warmed_up();
    ProgressUpdate update(fed, parser, 1030);
    update.feed(std::span(lines).first(cut));
    update.feed(std::span(lines).subspan(cut));
    EXPECT_EQ(update.finish(), whole_advances) << "cut at " << cut;
    EXPECT_EQ(fed.to_json(), whole.to_json()) << "cut at " << cut;
  }
  // The step interval is the read's time over all the steps it covered (30 s / 40 steps),
  // not one batch's.
  EXPECT_DOUBLE_EQ(whole.longest_interval, 0.75);
}

}  // namespace
}  // namespace llmwatch

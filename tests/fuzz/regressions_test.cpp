// Every input a fuzzer ever crashed on, replayed in the ordinary unit-test build too
// (tests/fuzz/regressions/<target>/*): the parsers must answer with an error, not throw.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "probes/gpu/gpu_record.h"
#include "probes/quota.h"
#include "probes/training_log.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_text.h"
#include "test_util.h"
#include "util/strings.h"
#include "util/units.h"

namespace llmwatch {
namespace {

std::vector<std::string> inputs(const std::string& target) {
  std::vector<std::string> out;
  std::string dir = std::string(LLMWATCH_TEST_FIXTURES) + "/../fuzz/regressions/" + target;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(testing::read_file(e.path().string()));
  return out;
}

TEST(FuzzRegressions, SqueueTextHugeIdsAreAnErrorNotAnException) {
  auto all = inputs("squeue_text");
  ASSERT_FALSE(all.empty());
  for (const auto& text : all) EXPECT_NO_THROW(parse_squeue_text(text));
  auto r = parse_squeue_text("1|99999999999999999999999|N/A|RUNNING|a|b|c|d|e|f|g\n");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("is not a number"), std::string::npos);
}

// A malformed job object ("resv_name": }) got a verdict from simdjson that depended on the
// bytes after it in memory, so the same squeue output read whole and read in 27-byte pieces
// gave two answers. Every cut must give the same answer.
TEST(FuzzRegressions, SqueueJsonInPiecesIsTheSameAsWhole) {
  auto all = inputs("squeue_json");
  ASSERT_FALSE(all.empty());
  for (const auto& text : all)
    for (size_t piece : {size_t{1}, size_t{27}, size_t{4096}}) {
      auto whole = parse_squeue_json(text);
      SqueueJsonReader reader;
      for (size_t i = 0; i < text.size(); i += piece)
        reader.feed(std::string_view(text).substr(i, piece));
      auto pieces = reader.finish();
      EXPECT_EQ(pieces.error, whole.error) << piece;
      EXPECT_EQ(pieces.jobs.size(), whole.jobs.size()) << piece;
    }
}

// A time too large for 64 bits (a 100-digit "start_time") was cast from double to int64:
// undefined behaviour, found by the fuzzer under UBSan. Such a number is unknown (0), never a
// wrapped value.
TEST(FuzzRegressions, SqueueJsonNumbersBeyond64BitsAreUnknownNotCast) {
  std::string text = testing::read_file(testing::fixture("slurm-22.05.8/squeue.json"));
  const std::string from = "\"start_time\": 1795311385";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "\"start_time\": 1" + std::string(100, '7'));
  auto r = parse_squeue_json(text);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_FALSE(r.jobs.empty());
  EXPECT_EQ(r.jobs[0].start_time, 0) << "unknown, not a wrapped number";
  for (const auto& t : inputs("squeue_json")) EXPECT_NO_THROW(parse_squeue_json(t));
}

TEST(FuzzRegressions, QuotaHugeNumbersAreNotUnderstood) {
  for (const auto& text : inputs("quota"))
    for (const char* kind : {"lfs", "mmlsquota", "beegfs", "quota"})
      EXPECT_NO_THROW(parse_quota(kind, text));
  EXPECT_FALSE(parse_size("9" + std::string(400, '9') + "GiB"));
}

TEST(FuzzRegressions, TrainingLogStepThatWouldOverflowIsNoStep) {
  TrainingLogParser parser;
  for (const auto& text : inputs("training_log"))
    for (const auto& line : split(text, '\n')) EXPECT_NO_THROW(parser.parse(line));
  auto l = parser.parse(
      " iteration 333333333333333333333333348/  500000 | consumed samples: 1 | elapsed time per "
      "iteration (ms): 1.0 | number of skipped iterations: 1e300 |");
  EXPECT_FALSE(l.step);
  EXPECT_FALSE(l.skipped_iterations);
}

TEST(FuzzRegressions, NvidiaSmiIndexOutOfRangeIsNotCast) {
  for (const auto& text : inputs("nvidia_smi_text")) EXPECT_NO_THROW(parse_nvidia_smi_csv(text));
  auto p = parse_nvidia_smi_csv("index, pci.bus_id\ninf, 0000:01:00.0\n1e300, 0000:02:00.0\n");
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.gpus[0].index, 0);  // position in the output instead
  EXPECT_EQ(p.gpus[1].index, 1);
}

// Hostlists with repeated names round-trip as a set; one that timed out (node-[0-417035]: 14 s
// under ASan) is refused as too long, at once.
TEST(FuzzRegressions, HostlistDuplicatesRoundTripAsASet) {
  for (const auto& text : inputs("hostlist")) {
    auto hosts = expand_hostlist(text);
    if (!hosts) {
      EXPECT_NE(hosts.error().find("longer than 65536 hosts"), std::string::npos)
          << text << ": " << hosts.error();
      continue;
    }
    auto again = expand_hostlist(compress_hostlist(*hosts));
    ASSERT_TRUE(again);
    EXPECT_EQ(std::set<std::string>(hosts->begin(), hosts->end()),
              std::set<std::string>(again->begin(), again->end()));
  }
}

}  // namespace
}  // namespace llmwatch

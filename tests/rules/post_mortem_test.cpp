// The cause the goodput ledger charges an end to (#29: "node-17: 212 GPU-h (Xid 79 ×3, ...)"),
// and the record kept in the store.
#include "rules/post_mortem.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

PostMortem ended(EndClass cls, std::vector<std::string> evidence = {},
                 std::vector<std::string> why = {}) {
  PostMortem p;
  p.verdict.cls = cls;
  p.verdict.evidence = std::move(evidence);
  if (!why.empty()) p.suspects.push_back({"node-17", 0.9, std::move(why)});
  return p;
}

TEST(LedgerCause, AGpuErrorIsChargedToTheXidThatNamedIt) {
  EXPECT_EQ(ledger_cause(ended(EndClass::GpuError, {},
                               {"node-check: Xid 79 GPU 3: GPU has fallen off the bus"})),
            "Xid 79");
  EXPECT_EQ(ledger_cause(ended(EndClass::GpuError,
                               {"[171167.620236] NVRM: Xid (0000:03:00): 48, pid=1, DBE"})),
            "Xid 48");
  EXPECT_EQ(ledger_cause(ended(EndClass::GpuError, {"CUDA error: an illegal memory access"})),
            "GPU error")
      << "no Xid named: the class";
  EXPECT_EQ(ledger_cause(ended(EndClass::Network, {}, {"Xid 79 GPU 3"})), "NCCL or network error")
      << "only a GPU error is charged to an Xid";
  EXPECT_EQ(ledger_cause(ended(EndClass::GpuError, {"Xid abc", "Xid -3"})), "GPU error");
}

// A post-mortem kept in the store (one waiting for its node-check is read back next cycle)
// says what it said: its class, whether the run failed, its suspects.
TEST(PostMortemRecord, ReadBackItSaysWhatItSaid) {
  PostMortem p = ended(EndClass::OutOfMemory, {"Slurm: task 7 OUT_OF_MEMORY"}, {"Xid 79 GPU 3"});
  p.task = "7";
  p.task_start = 1'799'999'000;
  p.node_check_pending = true;
  auto back = PostMortem::from_json(p.to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->verdict.cls, EndClass::OutOfMemory);
  EXPECT_TRUE(is_failure(back->verdict.cls));
  EXPECT_TRUE(back->node_check_pending);
  EXPECT_TRUE(back->same_task("7", 1'799'999'000));
  ASSERT_EQ(back->suspects.size(), 1u);
  EXPECT_EQ(back->suspects[0].node, "node-17");
  p.verdict.cls = EndClass::Completed;
  EXPECT_FALSE(is_failure(PostMortem::from_json(p.to_json())->verdict.cls));
}

}  // namespace
}  // namespace llmwatch

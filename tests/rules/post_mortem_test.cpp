// The cause the goodput ledger charges an end to (#29: "node-17: 212 GPU-h (Xid 79 ×3, ...)").
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

}  // namespace
}  // namespace llmwatch

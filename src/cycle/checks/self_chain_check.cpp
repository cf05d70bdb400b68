// llmwatch's own chain: exactly one successor queued (self_chain.h). In a self-job run the
// successor was already queued before the cycle began (queue_successor_first); this check
// mends a chain that lost it and removes duplicates.
#include "cycle/check.h"
#include "cycle/self_chain.h"

namespace llmwatch {
namespace {

class SelfChainCheck : public Check {
 public:
  std::string name() const override { return "self-chain"; }
  int stage() const override { return 1; }
  bool enabled(const CycleState& s) const override { return s.queue_ok(); }
  CheckReport judge(CycleState& s) override {
    CheckReport r;
    if (auto f =
            ensure_successor(s.queue->jobs, s.config, s.slurm, s.store, s.now, s.config.dry_run))
      r.findings.push_back(*f);
    return r;
  }
};

LLMWATCH_REGISTER_CHECK(SelfChainCheck);

}  // namespace
}  // namespace llmwatch

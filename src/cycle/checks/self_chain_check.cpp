// llmwatch's own chain: exactly one successor queued (self_chain.h). In a self-job run the
// successor was already queued before the cycle began (queue_successor_first); this check
// finds a chain that lost it, or holds several, and the successor action
// (plugins/self/successor.cpp) mends it: journaled, dry-run aware, announced.
#include <cstdlib>

#include "cycle/check.h"
#include "cycle/self_chain.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/identity.h"

namespace llmwatch {
namespace {

constexpr const char* kScope = "llmwatch/successor";  // both kinds below

class SelfChainCheck : public Check {
 public:
  std::string name() const override { return "self-chain"; }
  int stage() const override { return 1; }
  bool enabled(const CycleState& s) const override { return s.queue_ok(); }
  CheckReport judge(CycleState& s) override {
    CheckReport r;
    r.scopes.push_back(kScope);  // the queue was seen: a chain made whole resolves the finding
    if (s.store.get(kv::kSelfChain).value_or("") != "on") return r;
    const char* own = std::getenv("SLURM_JOB_ID");
    std::string own_id = own && std::getenv("LLMWATCH_SELF_JOB") ? own : "";
    auto chain = check_chain(s.queue->jobs, s.config, own_id, current_user_name());
    for (const auto& q : chain.mine)
      if (q.pending()) s.self_pending.push_back(q);
    if (s.self_pending.size() == 1) {
      s.store.put(kv::kSelfSuccessor, std::to_string(s.self_pending[0].job_id), s.now);
      return r;
    }
    if (s.self_pending.size() > 1) {
      // Two chains: a hand-run `submit` beside a running one, or a successor queued first by
      // a run that then found another.
      Finding f = make_finding(
          "llmwatch", "llmwatch", "successor-duplicate", Severity::Info,
          std::to_string(s.self_pending.size()) + " llmwatch jobs are queued to follow this one");
      for (const auto& q : s.self_pending) f.evidence.push_back(std::to_string(q.job_id));
      r.findings.push_back(std::move(f));
      return r;
    }
    if (chain.other_running) return r;  // that run queues the successor itself
    r.findings.push_back(make_finding(
        "llmwatch", "llmwatch", "successor-missing", Severity::Warning,
        own_id.empty() ? "the llmwatch chain has no queued job: it stops once none runs"
                       : "no llmwatch job is queued to follow this one (" + own_id +
                             "): the chain stops when it ends"));
    return r;
  }
};

LLMWATCH_REGISTER_CHECK(SelfChainCheck);

}  // namespace
}  // namespace llmwatch

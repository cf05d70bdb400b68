// The action journal: an action is journaled as `intent` before it runs and finished after.
// A row still `intent` from an earlier cycle means llmwatch stopped in between (killed, a
// full disk): the action may or may not have run. It is never retried blindly (its
// idempotency key stays taken); it is reconciled against what Slurm shows now, marked
// `unknown`, and raised as a finding so that a human looks.
#include "cycle/check.h"
#include "store/store.h"

namespace llmwatch {
namespace {

// What the queue says now about the thing the action was for ("7", "3_1", a node...).
std::string queue_view(const CycleState& s, const ActionRow& a) {
  if (!s.queue_ok()) return "Slurm did not answer: its state is unknown too";
  // Keys are "action:task[@start][:finding]" (plugins/registry.cpp, task_identity).
  auto colon = a.idem_key.find(':');
  std::string target = colon == std::string::npos ? "" : a.idem_key.substr(colon + 1);
  target = target.substr(0, target.find_first_of(":@"));
  for (const auto& j : s.queue->jobs)
    if (j.display_id() == target || std::to_string(j.job_id) == target)
      return "Slurm shows " + target + " " + j.state + " now";
  return target.empty() ? "" : "Slurm shows no queued job " + target + " now";
}

class JournalCheck : public Check {
 public:
  std::string name() const override { return "journal"; }
  int stage() const override { return 1; }  // after the queue, to reconcile against it
  void prepare(CycleState& s) override { stale_ = s.store.unfinished_actions(s.now); }
  CheckReport judge(CycleState& s) override {
    CheckReport r;
    r.scopes.push_back("journal:");
    for (const auto& a : stale_) {
      std::string view = queue_view(s, a);
      Finding f = make_finding("journal:" + std::to_string(a.id), a.subject, "unconfirmed",
                               Severity::Warning,
                               a.kind + " of " + a.subject +
                                   " may or may not have run: llmwatch "
                                   "stopped before recording it");
      f.evidence.push_back("journal #" + std::to_string(a.id) + " " + a.idem_key + " (" + a.reason +
                           ")");
      if (!view.empty()) f.evidence.push_back(view);
      r.findings.push_back(std::move(f));
      s.store.finish_action(a.id, "unknown",
                            "llmwatch stopped before recording the outcome" +
                                (view.empty() ? std::string() : "; " + view),
                            s.now);
    }
    return r;
  }

 private:
  std::vector<ActionRow> stale_;
};

LLMWATCH_REGISTER_CHECK(JournalCheck);

}  // namespace
}  // namespace llmwatch

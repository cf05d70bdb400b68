// Node health: GPU verdicts for the nodes llmwatch manages (node_health_step.h). It runs after
// the job-log check so that it knows which watched task runs where; its plans drain a faulty
// node before the job that ran on it is restarted. Without sinfo there are no reasons or
// limits to go by: no node step.
#include "cycle/check.h"

namespace llmwatch {
namespace {

class NodeHealthCheck : public Check {
 public:
  std::string name() const override { return "node-health"; }
  int stage() const override { return 2; }
  bool enabled(const CycleState& s) const override { return s.config.gpu.enabled && s.nodes_ok(); }
  CheckReport judge(CycleState& s) override {
    std::vector<WatchedTask> running;
    for (const auto& w : s.work)
      if (w.obs.running) running.push_back({w.label, *w.obs.running});
    s.node_step = node_health_step(s.config, s.slurm, s.store, *s.nodes, running, s.now);
    CheckReport r;
    r.findings = s.node_step.findings;
    r.scopes = s.node_step.scopes;
    r.unknown = s.node_step.unknown;
    s.unusable.insert(s.unusable.end(), s.node_step.bad_nodes.begin(), s.node_step.bad_nodes.end());
    return r;
  }
};

LLMWATCH_REGISTER_CHECK(NodeHealthCheck);

}  // namespace
}  // namespace llmwatch

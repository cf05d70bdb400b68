// Slurm: one squeue and one sinfo per cycle, side by side, whatever the number of jobs. Only
// the watched jobs and llmwatch's own are kept from the queue. A Slurm that does not answer
// is `unknown` for a few cycles, then a warning; never "every job is gone".
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cycle/check.h"
#include "cycle/failure_domain.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"
#include "util/text.h"

namespace llmwatch {
namespace {

class SlurmCheck : public Check {
 public:
  std::string name() const override { return "slurm"; }
  int stage() const override { return 0; }

  void prepare(CycleState& s) override {
    JobFilter filter;
    filter.names.insert(s.config.self.job_name);
    for (const auto& job : s.config.jobs) {
      if (job.id)
        filter.ids.insert(*job.id);
      else
        filter.names.insert(job.name);
    }
    s.slurm.set_filter(std::move(filter));
    // The format chosen in an earlier cycle holds: a queue too big for JSON stays text.
    if (s.store.get(kv::kSlurmFormat).value_or("") == "text") s.slurm.use_text_mode();
    s.slurm_failures =
        static_cast<int>(to_int64(s.store.get(kv::kSlurmFailures).value_or("0")).value_or(0));
  }

  void observe(CycleState& s) override {
    SqueueParse queue;
    SinfoParse nodes;
    std::string queue_error, nodes_error;
    std::thread sinfo([&] {
      auto t0 = std::chrono::steady_clock::now();
      nodes_error = run_guarded("sinfo", [&] { nodes = s.slurm.nodes(); }).error();
      sinfo_s_ = seconds_since(t0);
    });
    auto t0 = std::chrono::steady_clock::now();
    queue_error = run_guarded("squeue", [&] { queue = s.slurm.queue(); }).error();
    squeue_s_ = seconds_since(t0);
    sinfo.join();
    if (!queue_error.empty()) queue = SqueueParse{{}, queue_error};
    if (!nodes_error.empty()) nodes = SinfoParse{{}, nodes_error};
    s.queue = std::move(queue);
    s.nodes = std::move(nodes);
  }

  CheckReport judge(CycleState& s) override {
    CheckReport r;
    r.probes.push_back({"squeue", s.queue_ok(), squeue_s_});
    r.probes.push_back({"sinfo", s.nodes_ok(), sinfo_s_});
    if (s.nodes_ok()) {
      // The node snapshot `llmwatch nodes` and the metrics read: only nodes needing attention.
      nlohmann::json attention = nlohmann::json::array();
      for (const auto& n : s.nodes->nodes)
        if (n.unusable()) {
          s.unusable.push_back(n.name);
          attention.push_back({{"name", n.name},
                               {"state", n.describe()},
                               {"reason", n.reason},
                               {"by", n.reason_set_by}});
        }
      s.snapshots.emplace_back(
          kv::kNodes, json_dump({{"total", s.nodes->nodes.size()}, {"attention", attention}}));
    } else {
      ++r.unknown;
    }
    if (!s.queue_ok()) {
      ++s.slurm_failures;
      ++r.unknown;
      Finding f = make_finding("slurm", "slurm", "unreachable",
                               s.slurm_failures >= s.config.slurm.unreachable_alert_after
                                   ? Severity::Warning
                                   : Severity::Unknown,
                               "Slurm did not answer for " + std::to_string(s.slurm_failures) +
                                   " cycle(s); job states unknown");
      f.evidence.push_back(s.queue ? s.queue->error : "squeue was not asked");
      r.findings.push_back(std::move(f));
    } else {
      s.slurm_failures = 0;
      r.scopes = {"slurm/", "llmwatch/"};
    }
    return r;
  }

 private:
  double squeue_s_ = 0, sinfo_s_ = 0;
};

LLMWATCH_REGISTER_CHECK(SlurmCheck);

}  // namespace
}  // namespace llmwatch

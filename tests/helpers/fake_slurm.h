#pragma once
// A SlurmClient that answers from memory, for phase and cycle tests that need no cluster:
// the queue and nodes the test sets, and a record of every command llmwatch would have run.
// A hook can make any call throw, to prove failure domains.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "slurm/slurm_client.h"

namespace llmwatch::testing {

class FakeSlurm : public SlurmClient {
 public:
  FakeSlurm() : SlurmClient(SlurmSettings{}) {}

  std::vector<SlurmJob> jobs;
  std::vector<SlurmNode> node_list;
  std::string queue_error;  // non-empty: squeue "fails"
  std::map<std::string, std::map<std::string, std::string>> accounted_jobs;  // sacct, by id
  std::function<void(const std::string&)> on_show_job;                       // may throw
  // What `scontrol show job|node` answers, by id or name (absent: Slurm forgot it).
  std::map<std::string, std::map<std::string, std::string>> shown_jobs, shown_nodes;
  std::vector<std::string> cancelled, controls;
  std::vector<std::vector<std::string>> submitted, steps;
  std::string step_output;                // what `srun` prints (e.g. `llmwatch stacks` blocks)
  std::vector<std::string> step_outputs;  // if any: what the next `srun`s print, in turn

  SqueueParse queue() override {
    SqueueParse p;
    p.error = queue_error;
    if (p.ok()) p.jobs = jobs;
    return p;
  }
  SinfoParse nodes() override { return {node_list, ""}; }
  Status cancel(const std::string& id, const std::string&) override {
    cancelled.push_back(id);
    return {};
  }
  SubmitResult submit(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>&, bool) override {
    submitted.push_back(args);
    return {1000 + static_cast<std::int64_t>(submitted.size()), ""};
  }
  Status control(const std::string& verb, const std::string& id) override {
    controls.push_back(verb + " " + id);
    return {};
  }
  std::map<std::string, std::string> show_job(const std::string& id) override {
    if (on_show_job) on_show_job(id);
    auto it = shown_jobs.find(id);
    return it == shown_jobs.end() ? std::map<std::string, std::string>{} : it->second;
  }
  std::map<std::string, std::string> accounting(const std::string& id, std::int64_t) override {
    auto it = accounted_jobs.find(id);
    return it == accounted_jobs.end() ? std::map<std::string, std::string>{} : it->second;
  }
  ProcessResult run_step(const std::vector<std::string>& args, Seconds) override {
    steps.push_back(args);
    ProcessResult r;
    r.started = true;
    r.exit_code = 0;
    r.out = step_output;
    if (!step_outputs.empty()) {
      r.out = step_outputs.front();
      step_outputs.erase(step_outputs.begin());
    }
    return r;
  }
  std::map<std::string, std::string> show_node(const std::string& node) override {
    auto it = shown_nodes.find(node);
    return it == shown_nodes.end() ? std::map<std::string, std::string>{} : it->second;
  }
  Status update_node(const std::string& node, const std::string& state,
                     const std::string&) override {
    controls.push_back("update " + node + " " + state);
    return {};
  }
  std::string reboot_error;  // non-empty: `scontrol reboot` is refused (no RebootProgram)
  Status reboot_node(const std::string& node, const std::string& reason) override {
    if (!reboot_error.empty()) return Error{reboot_error};
    controls.push_back("reboot " + node + " " + reason);
    return {};
  }
};

}  // namespace llmwatch::testing

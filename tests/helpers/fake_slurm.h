#pragma once
// A SlurmClient that answers from memory, for phase and cycle tests that need no cluster:
// the queue and nodes the test sets, and a record of every command llmwatch would have run.
// A hook can make any call throw, to prove failure domains.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "slurm/slurm_client.h"

namespace llmwatch::testing {

class FakeSlurm : public SlurmClient {
 public:
  FakeSlurm() : SlurmClient(SlurmSettings{}) {}

  std::vector<SlurmJob> jobs;
  std::vector<SlurmNode> node_list;
  std::string queue_error;   // non-empty: squeue "fails"
  double queue_age = 0;      // > 0: the answer is that old (a wake replaying its tick's)
  std::string submit_error;  // non-empty: sbatch "fails" (nothing is submitted)
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
    p.age_s = queue_age;
    if (p.ok()) p.jobs = jobs;
    return p;
  }
  SinfoParse nodes() override { return {node_list, ""}; }
  // `squeue --name`: what Slurm lists now, which a wake's replayed `jobs` may not show (a run
  // resubmitted by hand since the tick); `jobs` when the test sets nothing else.
  std::optional<std::vector<SlurmJob>> listed_now;
  std::string named_error;  // non-empty: `squeue --name` "fails"
  int named_calls = 0;
  SqueueParse tasks_named(const std::string& name, const std::string& user) override {
    ++named_calls;
    SqueueParse p;
    p.error = named_error;
    if (p.ok())
      for (const auto& j : listed_now ? *listed_now : jobs)
        if (j.name == name && (user.empty() || j.user == user)) p.jobs.push_back(j);
    return p;
  }
  // As Slurm does, a cancelled task is COMPLETING at once (its end, and what leaves the queue,
  // are the test's to say); unless the cancel is lost, as when slurmctld dies before keeping it.
  bool loses_cancels = false;
  Status cancel(const std::string& id, const std::string&) override {
    cancelled.push_back(id);
    if (!loses_cancels)
      for (auto& j : jobs)
        if (j.display_id() == id && (j.running() || j.pending())) j.state = "COMPLETING";
    return {};
  }
  SubmitResult submit(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>&, bool) override {
    if (!submit_error.empty()) return {std::nullopt, submit_error};
    submitted.push_back(args);
    return {1000 + static_cast<std::int64_t>(submitted.size()), ""};
  }
  Status control(const std::string& verb, const std::string& id) override {
    controls.push_back(verb + " " + id);
    return {};
  }
  // "ID NODES" for each `scontrol update JobId=ID ExcNodeList=NODES`, which the task then shows.
  std::vector<std::string> exclusions_set;
  Status set_excluded_nodes(const std::string& id, const std::string& nodes) override {
    exclusions_set.push_back(id + " " + nodes);
    for (auto& j : jobs)
      if (j.control_id() == id) j.excluded_nodes = nodes;
    return {};
  }
  std::map<std::string, std::string> show_job(const std::string& id) override {
    if (on_show_job) on_show_job(id);
    auto it = shown_jobs.find(id);
    return it == shown_jobs.end() ? std::map<std::string, std::string>{} : it->second;
  }
  // squeue's details of new tasks, from the same records (whose paths have no pattern).
  Result<JobDetails> job_details(const std::vector<std::string>& ids) override {
    ++detail_calls;
    JobDetails out;
    for (const auto& id : ids) {
      if (on_show_job) on_show_job(id);
      if (auto it = shown_jobs.find(id); it != shown_jobs.end()) out[id] = it->second;
    }
    return out;
  }
  int detail_calls = 0;
  // `scontrol write batch_script`: the scripts Slurm keeps, by task id (absent: it forgot it).
  std::map<std::string, std::string> scripts;
  std::vector<std::string> scripts_asked;
  Result<std::string> batch_script(const std::string& id) override {
    scripts_asked.push_back(id);
    if (auto it = scripts.find(id); it != scripts.end()) return it->second;
    return Error{"scontrol write batch_script " + id +
                 ": no script (job script retrieval failed: Invalid job id specified?)"};
  }
  std::map<std::string, std::string> accounting(const std::string& id, std::int64_t) override {
    auto it = accounted_jobs.find(id);
    return it == accounted_jobs.end() ? std::map<std::string, std::string>{} : it->second;
  }
  // srun may be called from several threads at once (the node-checks of a cycle).
  ProcessResult run_step(const std::vector<std::string>& args, Seconds timeout) override {
    {
      std::lock_guard<std::mutex> lock(steps_mutex);
      steps.push_back(args);
      step_timeouts.push_back(timeout);
      max_in_flight = std::max(max_in_flight, ++in_flight);
      ++arrived;
    }
    // A rendezvous: wait (5 s at most) until that many steps have come, which calls made one
    // after another cannot reach while the first still waits.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived < step_rendezvous && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ProcessResult r;
    r.started = true;
    r.exit_code = 0;
    std::lock_guard<std::mutex> lock(steps_mutex);
    --in_flight;
    r.out = step_output;
    if (!step_outputs.empty()) {
      r.out = step_outputs.front();
      step_outputs.erase(step_outputs.begin());
    }
    return r;
  }
  std::mutex steps_mutex;
  std::vector<Seconds> step_timeouts;
  std::atomic<int> in_flight{0}, arrived{0};
  int max_in_flight = 0, step_rendezvous = 0;
  std::map<std::string, std::string> show_node(const std::string& node) override {
    auto it = shown_nodes.find(node);
    return it == shown_nodes.end() ? std::map<std::string, std::string>{} : it->second;
  }
  std::map<std::string, std::string> node_reasons;  // the last reason each node was given
  Status update_node(const std::string& node, const std::string& state,
                     const std::string& reason) override {
    controls.push_back("update " + node + " " + state);
    node_reasons[node] = reason;
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

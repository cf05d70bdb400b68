#pragma once
// A watched run "tr" (task 7 on node-[1-3]) through whole cycles of the real Supervisor
// against a FakeSlurm: it runs, prints, and ends the way a test says. Shared by the cycle
// tests of how runs end (post-mortem, lifecycle trust).
#include <memory>
#include <stdexcept>
#include <string>

#include "config/config.h"
#include "cycle/supervisor.h"
#include "fake_slurm.h"
#include "rules/node_report.h"
#include "store/store.h"
#include "test_util.h"
#include "util/identity.h"

namespace llmwatch::testing {

struct EndingRun {
  TempDir dir;
  FakeSlurm slurm;
  Config config;
  std::unique_ptr<Store> store;
  std::string log = dir / "train.log";
  double now = 1'800'000'000;

  explicit EndingRun(const std::string& extra = "") {
    auto loaded = load_config_string(
        "[llmwatch]\nstate_dir = \"" + dir / "state" +
            "\"\nresolve_after_cycles = 1\n[[job]]\nname = \"tr\"\nstartup_grace = \"60s\"\n" +
            extra,
        "test.toml");
    if (!loaded.config) throw std::runtime_error(loaded.errors.front().str());
    config = *loaded.config;
    store = std::make_unique<Store>(config.state_dir);
  }
  SlurmJob task(const std::string& state) {
    SlurmJob j;
    j.job_id = 7;
    j.name = "tr";
    j.user = current_user_name();
    j.state = state;
    j.nodes = "node-[1-3]";
    j.node_count = 3;
    j.partition = "gpu";
    j.start_time = 1'799'999'000;
    j.std_out = log;
    j.command = "/train.sh";
    return j;
  }
  CycleResult cycle(double at) { return Supervisor(config, *store, slurm).run_cycle(at); }
  // The task runs (a cycle sees its first step), then prints `lines` while still listed as
  // running, and the next cycle reads them.
  CycleResult runs_and_prints(const std::string& lines) {
    write_file(log, "global_step: 1\n");
    slurm.jobs = {task("RUNNING")};
    cycle(now);
    write_file(log, lines, true);
    return cycle(now + 30);
  }
  // The task runs and prints a step every 10 s, `steps` of them, each read by a cycle (the last
  // at now + 10 * (steps - 1)).
  void steps_every_10s(int steps = 6) {
    slurm.jobs = {task("RUNNING")};
    for (int i = 0; i < steps; ++i) {
      write_file(log, "global_step: " + std::to_string(i + 1) + "\n", i > 0);
      cycle(now + 10 * i);
    }
  }
  // Idle gpu nodes node-1 .. node-N: room for a restart that avoids some of them.
  void idle_nodes(int n) {
    slurm.node_list.clear();
    for (int i = 1; i <= n; ++i)
      slurm.node_list.push_back({"node-" + std::to_string(i), "idle", {}, "", "", {"gpu"}, ""});
  }
  // What `scontrol show job ID` (task 7's, or another on the same nodes) answers once the task
  // ended with `final_state`.
  void shows_ended(const std::string& final_state, const std::string& exit_code = "1:0",
                   const std::string& id = "7") {
    slurm.shown_jobs[id] = {{"JobState", final_state},
                            {"ExitCode", exit_code},
                            {"NodeList", "node-[1-3]"},
                            {"NumNodes", "3"},
                            {"NumTasks", "3"}};
  }
  // The task runs and prints `lines`, then ends with Slurm's `final_state` (still listed by
  // squeue when `listed`), and the next cycle finds it gone.
  CycleResult runs_then_ends(const std::string& lines, const std::string& final_state,
                             bool listed = true, const std::string& exit_code = "1:0") {
    write_file(log, "global_step: 1\n");
    slurm.jobs = {task("RUNNING")};
    cycle(now);
    write_file(log, lines, true);
    slurm.jobs.clear();
    if (listed) slurm.jobs = {task(final_state)};
    shows_ended(final_state, exit_code);
    return cycle(now + 30);
  }
  const Finding* finding(const CycleResult& r, const std::string& kind) {
    for (const auto& f : r.findings)
      if (f.kind == kind) return &f;
    return nullptr;
  }
  std::string submitted() {
    std::string out;
    for (const auto& cmd : slurm.submitted)
      for (const auto& a : cmd) out += a + " ";
    return out;
  }
};

// What `llmwatch node-check --json` prints for one node; a failing one has Xid 48 on GPU 2.
inline std::string node_check_json(const std::string& node, Verdict v, double ts) {
  NodeReport r;
  r.node = node;
  r.ts = ts;
  r.verdict = v;
  if (v != Verdict::Ok)
    r.items.push_back({"xid", 2, v, "drain", "Xid 48 GPU 2: double-bit ECC", {}});
  return r.to_json() + "\n";
}

// A crash no line attributes to a node: a CUDA error that names none.
inline constexpr const char* kCudaError =
    "RuntimeError: CUDA error: an illegal memory access was encountered\n";

}  // namespace llmwatch::testing

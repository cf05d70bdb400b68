// `llmwatch stacks --job J`: runs on a compute node (the `dump` action starts it on every node
// of a hung job with srun --overlap) and prints the Python stacks of the job's processes
// there, one block per process. Always exits 0: what could not be dumped says so in its block.
// `--ranks`: only which rank each of them is (no dump), to see a rank gone after its fatal line;
// with `--rank R`, whether that rank's process is exiting (probes/process_exit.h), with
// `--every-rank` whether each rank's is.
#include <algorithm>
#include <cstdlib>
#include <future>
#include <iostream>
#include <map>
#include <optional>

#include "app/commands.h"
#include "probes/kernel_exit.h"
#include "probes/node_dumps.h"
#include "probes/process_exit.h"
#include "probes/python_stacks.h"
#include "probes/rank_look.h"
#include "probes/rank_processes.h"
#include "util/paths.h"

namespace llmwatch {

namespace {

// gdb's attach and one backtrace: about a second; within the look's own deadline
// (cycle/checks/rank_exit_look.cpp).
constexpr Seconds kExitingLookTimeout{8};

std::string this_node() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  return hostname().substr(0, hostname().find('.'));
}

// The job's Python processes here, each with the rank its environment names (none for a
// launcher in the batch step beside srun's ranks: unname_tasks_beside_srun), its step, and
// whether it is exiting in the kernel (probes/kernel_exit.h): what both the look and the dump
// start from (/proc reads only).
std::vector<RankProcess> job_rank_processes(const std::string& job_id, const std::string& node) {
  std::vector<RankProcess> out;
  for (const auto& [pid, step] : job_python_processes(job_id, node)) {
    out.push_back(process_rank(pid, parent_of(pid), process_environment(pid)));
    out.back().exiting = process_kernel_exit(pid);
    out.back().step = step;
  }
  unname_tasks_beside_srun(out);
  return out;
}

}  // namespace

int cmd_stack_ranks(const std::string& job_id, const ExitLook& look) {
  // Each process's /proc is read, its rank from its environment (rules/rank_exit.h judges what
  // every node answered). Only the rank asked about, where it is here, is attached to, once:
  // whether it is exiting (a rank whose program ended, lingering in its exit); for srun's task
  // where that is torchrun's agent, its workers too. With `every`, each rank's own process
  // here, all at once (16 at most): one gdb a rank, a node's 8 in about a second. With
  // `stacks`, each rank's own process's Python stack as well, from the same gdb where it is
  // looked into for its exit (probes/rank_look.h): the hang's first dump, should the look find
  // the rank ended (its workers' stacks are left to the dump).
  NodeRanks here{this_node(), {}, true};
  here.processes = job_rank_processes(job_id, here.node);
  std::vector<int> exit_pids;
  if (look.every)
    exit_pids = every_rank_look_pids(here.processes);
  else if (look.rank)
    exit_pids = rank_look_pids(here.processes, *look.rank, look.by_task);
  std::vector<int> stack_pids;
  if (look.stacks) stack_pids = every_rank_look_pids(here.processes);
  auto has = [](const std::vector<int>& pids, int pid) {
    return std::find(pids.begin(), pids.end(), pid) != pids.end();
  };
  std::map<int, std::future<RankLook>> looks;
  // One exiting in the kernel is not attached to: gdb would wait on it to its timeout.
  for (const auto& p : here.processes)
    if (p.exiting.empty() && (has(exit_pids, p.pid) || has(stack_pids, p.pid)))
      looks.emplace(p.pid,
                    std::async(std::launch::async, look_into_rank, p.pid, has(exit_pids, p.pid),
                               has(stack_pids, p.pid), kExitingLookTimeout));
  std::vector<ProcessStack> stacks;
  for (auto& p : here.processes) {
    auto it = looks.find(p.pid);
    if (it == looks.end()) continue;
    RankLook seen = it->second.get();
    p.exiting = seen.exiting;
    if (seen.stack) {
      seen.stack->node = here.node;
      seen.stack->role = process_role(here.processes, p);
      stacks.push_back(std::move(*seen.stack));
    }
  }
  // The ranks first: their block is judged whole by its count, the stacks' blocks after it.
  std::cout << format_node_ranks(here) << format_stacks(stacks) << std::flush;
  return kExitOk;
}

int cmd_stacks(const std::string& job_id, double timeout_seconds) {
  const std::string node = this_node();
  auto timeout = Seconds(static_cast<long long>(timeout_seconds));
  // The ranks in one wave (8 ranks of a node dumped one by one would take 8 deadlines), their
  // workers after them, at most kParallelDumps at once (probes/node_dumps.h). Each rank's
  // flight recorder is fired first, where the job configured one.
  const auto processes = job_rank_processes(job_id, node);
  auto stacks = dump_bounded(ranks_first(processes), kParallelDumps, timeout, [&](int pid) {
    // One exiting in the kernel has no stack to read, and gdb would wait on it to its timeout.
    for (const auto& p : processes)
      if (p.pid == pid && !p.exiting.empty()) {
        ProcessStack s;
        s.pid = pid;
        s.text = "not dumped: the process is exiting in the kernel (" + p.exiting + ")\n";
        return s;
      }
    return rank_forensics(pid, timeout);
  });
  for (auto& s : stacks) {
    s.node = node;
    // What it is to the ranks: a hang's confirmation reads only the ranks' and their workers'.
    for (const auto& p : processes)
      if (p.pid == s.pid) s.role = process_role(processes, p);
    if (s.comm.empty()) s.comm = process_comm(s.pid);
  }
  if (stacks.empty())
    std::cout << "=== llmwatch-stack node=" << node << " pid=0 comm=none ===\n"
              << "no Python process of job " << job_id << " on " << node << "\n";
  std::cout << format_stacks(stacks) << std::flush;
  return kExitOk;
}

}  // namespace llmwatch

#include "cycle/checks/rank_exit_look.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "cycle/checks/node_check_srun.h"
#include "cycle/failure_domain.h"
#include "rules/rank_exit.h"
#include "slurm/hostlist.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

// What a look waits for at most: srun's start, a /proc read on each node and, on the crashed
// rank's, gdb's backtrace of it (at most 8 s, app/cmd_stacks.cpp).
constexpr Seconds kLookTimeout{15};

bool wants_look(const CycleState& s, const JobWork& w) {
  if (!w.obs.running || !w.obs.log_error.empty()) return false;
  const JobProgress& p = w.progress;
  if (p.task != w.obs.running->display_id() || hosts_in(w.obs.running->nodes).empty()) return false;
  const double due = rank_look_due(p);
  return due > 0 && s.now >= due;
}

struct Look {
  JobWork* w = nullptr;
  std::vector<std::string> nodes;
  std::vector<std::string> args;
  bool deferred = false;
  std::string failed;  // srun's failure, when no node answered
  RankExit verdict;
};

}  // namespace

void look_for_ended_ranks(CycleState& s) {
  std::vector<Look> looks;
  for (auto& w : s.work) {
    if (!wants_look(s, w)) continue;
    const SlurmJob& task = *w.obs.running;
    // As the job's owner, in its group: slurmctld lets no one else start a step in it, and the
    // step then reads no more of /proc than the owner could.
    auto identity = owner_identity_args(task);
    if (!identity) {
      // It cannot be asked: not again for this crash.
      w.progress.crash_rank_looked =
          std::max(s.now, fatal_line_at(w.progress) + kAfterFatalCrashFloor);
      s.store.add_event(s.now, "rank-exit", w.label, "warning",
                        "cannot look for the crashed rank's process: " + identity.error());
      continue;
    }
    Look look;
    look.w = &w;
    look.nodes = hosts_in(task.nodes);
    look.args = std::move(*identity);
    for (auto& arg : stacks_step_args(task)) look.args.push_back(std::move(arg));
    look.args.push_back("--ranks");
    // The rank the line names is looked into too: gone, or there but on its way out; where it
    // named none, each rank is (the one exiting is the line's).
    if (w.progress.crash_rank >= 0) {
      look.args.insert(look.args.end(), {"--rank", std::to_string(w.progress.crash_rank)});
      if (w.progress.crash_by_task) look.args.push_back("--by-task");
    } else {
      look.args.push_back("--every-rank");
    }
    looks.push_back(std::move(look));
  }
  if (looks.empty()) return;
  boost::asio::thread_pool pool(std::min<std::size_t>(looks.size(), kParallelNodeChecks));
  for (auto& look : looks)
    boost::asio::post(pool, [&s, &look] {
      auto timeout = s.remote.grant(kLookTimeout);
      if (!timeout) {
        look.deferred = true;
        return;
      }
      Status ran = run_guarded("srun stacks --ranks", [&] {
        auto r = s.slurm.run_step(look.args, *timeout);
        auto answers = parse_node_ranks(r.out);
        if (answers.empty()) {
          look.failed =
              r.describe("srun llmwatch stacks --ranks") + " " + sanitize_line(r.err, 200);
          return;
        }
        const JobProgress& p = look.w->progress;
        look.verdict = rank_exit(answers, look.nodes, p.crash_rank, p.crash_by_task);
      });
      if (!ran) look.failed = ran.error();
    });
  pool.join();
  for (auto& look : looks) {
    JobWork& w = *look.w;
    if (look.deferred) continue;  // no time left in this cycle: the next one asks
    w.progress.crash_rank_looked = s.now;
    const std::string after = "after its " + w.progress.crash + " line: ";
    if (!look.failed.empty()) {
      spdlog::warn("{}: could not look for the crashed rank's process {}{}", w.label, after,
                   look.failed);
      s.store.add_event(s.now, "rank-exit", w.label, "warning",
                        "could not look for the crashed rank's process " + after + look.failed);
      continue;
    }
    if (look.verdict.seen == RankSeen::Ended) {
      // Its line is now one no rank goes on from: the allowance after it is the floor.
      w.progress.crash_sticky = true;
      w.progress.crash_rank_ended = true;
    }
    const char* seen = look.verdict.seen == RankSeen::Ended     ? "ended"
                       : look.verdict.seen == RankSeen::Running ? "running"
                                                                : "unknown";
    const std::string said =
        "task " + w.obs.running->display_id() + " " + after + seen + ": " + look.verdict.why;
    // In the daemon's log too: what shortened (or did not shorten) the run's wait, beside the
    // hang it brings.
    spdlog::info("{}: the crashed rank's process, {}", w.label, said);
    s.store.add_event(s.now, "rank-exit", w.label, "info", said);
  }
}

}  // namespace llmwatch

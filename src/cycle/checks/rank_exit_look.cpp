#include "cycle/checks/rank_exit_look.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "cycle/checks/node_check_srun.h"
#include "cycle/failure_domain.h"
#include "probes/rank_look.h"
#include "rules/rank_exit.h"
#include "slurm/hostlist.h"
#include "store/hang_confirm.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

// What a look waits for at most: srun's start, a /proc read on each node and each rank's gdb
// (its backtrace and Python stack, at most 8 s, app/cmd_stacks.cpp).
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
  std::vector<ProcessStack> stacks;  // the ranks' Python stacks the nodes printed after the ranks
};

// The look's stacks as the hang's first dump (store/hang_confirm.h), where the rank has ended:
// its run's hang is then found kAfterFatalCrashFloor after the line, and the dump then takes its
// second at once if confirm_gap has passed since this cycle, instead of its first (its second
// a gap later). Only stacks that can confirm (a rank's training thread seen) and only where the
// job confirms hangs at all. Returns what the event says of it ("" where nothing was kept).
std::string keep_as_first_dump(CycleState& s, const JobWork& w, const Look& look) {
  if (look.verdict.seen != RankSeen::Ended || !w.settings || w.settings->confirm_hang.count() <= 0)
    return "";
  if (!shows_training_frames(look.stacks)) return "";
  put_hang_confirm(s.store, w.label,
                   {w.obs.running->display_id(), format_stacks(look.stacks), s.now, true}, s.now);
  return "; its ranks' stacks are the hang's first dump (" + summarize_stacks(look.stacks) + ")";
}

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
    // Each rank's stack from the same gdb (or, where it is not looked into, one of its own): the
    // hang's first dump, should the rank have ended.
    look.args.push_back("--with-stacks");
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
        auto read = read_look_output(r.out);
        look.stacks = std::move(read.stacks);
        if (read.answers.empty()) {
          look.failed =
              r.describe("srun llmwatch stacks --ranks") + " " + sanitize_line(r.err, 200);
          return;
        }
        const JobProgress& p = look.w->progress;
        look.verdict = rank_exit(read.answers, look.nodes, p.crash_rank, p.crash_by_task);
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
    const std::string said = "task " + w.obs.running->display_id() + " " + after + seen + ": " +
                             look.verdict.why + keep_as_first_dump(s, w, look);
    // In the daemon's log too: what shortened (or did not shorten) the run's wait, beside the
    // hang it brings.
    spdlog::info("{}: the crashed rank's process, {}", w.label, said);
    s.store.add_event(s.now, "rank-exit", w.label, "info", said);
  }
}

}  // namespace llmwatch

#pragma once
// The cycle's view of the queue and the nodes, kept for a wake between ticks (#30): the daemon
// wakes for one job when its hang allowance runs out, not at the next tick, and that wake reads
// the job's log against the last tick's squeue and sinfo answers. slurmctld still gets at most
// the two polls per interval; every other call (cancel, sbatch, scontrol, srun) is made.
#include <chrono>
#include <optional>

#include "slurm/slurm_client.h"

namespace llmwatch {

struct SlurmSnapshot {
  std::optional<SqueueParse> queue;
  std::chrono::steady_clock::time_point queue_asked;  // a replay's answer is this old
  std::optional<SinfoParse> nodes;
};

class SnapshotSlurm : public SlurmClient {
 public:
  // replay: answer queue() and nodes() from `snapshot` (a wake); else ask Slurm and keep the
  // answers that parsed (a tick).
  SnapshotSlurm(SlurmSettings settings, SlurmSnapshot& snapshot, bool replay)
      : SlurmClient(std::move(settings)), snapshot_(snapshot), replay_(replay) {}
  SqueueParse queue() override {
    if (replay_ && snapshot_.queue) {
      SqueueParse q = *snapshot_.queue;
      q.age_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - snapshot_.queue_asked)
              .count();
      return q;
    }
    auto asked = std::chrono::steady_clock::now();
    auto q = SlurmClient::queue();
    if (!replay_) {
      snapshot_.queue = q.ok() ? std::optional<SqueueParse>(q) : std::nullopt;
      snapshot_.queue_asked = asked;
    }
    return q;
  }
  SinfoParse nodes() override {
    if (replay_ && snapshot_.nodes) return *snapshot_.nodes;
    auto n = SlurmClient::nodes();
    if (!replay_) snapshot_.nodes = n.ok() ? std::optional<SinfoParse>(n) : std::nullopt;
    return n;
  }

 private:
  SlurmSnapshot& snapshot_;
  bool replay_;
};

}  // namespace llmwatch

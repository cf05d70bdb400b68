#pragma once
// The cycle's view of the queue and the nodes, kept for a wake between ticks (#30): the daemon
// wakes for one job when its hang allowance runs out, not at the next tick, and that wake reads
// the job's log against the last tick's squeue and sinfo answers. slurmctld still gets at most
// the two polls per interval; every other call (cancel, sbatch, scontrol, srun) is made.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

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

// Asks Slurm about the running tasks `ids` alone (`scontrol show job`, one call each, never a
// poll of the whole queue) and marks those that have ended with their final state, as the next
// squeue would list them: a wake on the snapshot then finds their ends at once (#30: a restart
// waiting for a crashed task's end waited for the next poll, up to half an interval). A task
// Slurm cannot say about (no answer, forgotten) stays as it was.
struct EndsLearned {
  int ended = 0;       // marked ended now
  int unanswered = 0;  // no state from Slurm: a slurmctld that does not answer is not asked again
};
EndsLearned settle_ended(SlurmSnapshot& snapshot, SlurmClient& slurm,
                         const std::vector<std::string>& ids);

}  // namespace llmwatch

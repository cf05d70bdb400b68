#pragma once
// A restart queued behind the task it replaces (#30). After a crash its log attributes to
// nodes, the restart is submitted at once, with `--dependency=afternotok:<task>`: Slurm starts
// it the moment the dying task is gone (its other ranks hanging on, a slow epilog), not at
// llmwatch's next look, which may be half an interval later. Slurm withdraws it by itself when
// the task ends well (exit 0, --kill-on-invalid-dep). What Slurm cannot tell is a task that
// steps on after its crash line (a trainer that caught the error), or one it requeued itself:
// the queued run would then start after that run's end, a second run of one training. This
// rule sees both and withdraws the queued run. Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/finding.h"
#include "rules/job_progress.h"
#include "rules/post_mortem.h"
#include "slurm/slurm_job.h"

namespace llmwatch {

struct QueuedRestart {
  std::string successor;         // the queued job's id, as sbatch gave it (an array's job id)
  std::string after_task;        // the task it waits on (its display id)
  std::int64_t after_start = 0;  // that task's start: a requeue keeps the id, not the start
  std::string excluded;          // the nodes it is kept off (a hostlist), "" none
  // When it was queued (llmwatch's clock, the cycle's): the ledger's repeat offenders it was
  // weighed against are those of then. 0: unknown (a record written before this field).
  double queued_at = 0;

  // One line for the store: "successor<TAB>after_task<TAB>after_start<TAB>excluded<TAB>
  // queued_at" (a record written before `excluded` has three fields: it excludes nothing known;
  // one before `queued_at` four).
  std::string to_text() const;
  static std::optional<QueuedRestart> from_text(std::string_view text);
};

// Whether squeue's entry `e` is the job sbatch submitted as `id` (an array resubmission is
// listed as "1001_8", or "1001_[8]" while it is pending).
bool submitted_as(const SlurmJob& e, const std::string& id);

// "restart-unneeded" (a warning) while the queued job is PENDING and the task it waits on steps
// on past its crash, or is back in the queue (requeued) or running again under a new start; or
// while another run of the job is queued or running (a person resubmitted it).
// Its cause is the queued job's id: the job the finding's withdraw action cancels.
std::optional<Finding> restart_not_needed(const std::string& label, const QueuedRestart& queued,
                                          const std::vector<SlurmJob>& entries,
                                          const JobProgress& progress);

// "restart-keep-off" (a warning) while the queued job is PENDING behind a task that still runs,
// and the crash's suspects (`suspects`) name nodes the queued job is not kept off: lines read
// since it was queued named them (the peers of a rank that died report it as they time out), or
// the crash named none when it was queued ([gpu] off: no node-check to ask); or the suspicion
// ledger came to hold nodes with repeated incidents since (`new_offenders`), which every restart
// stays off. Slurm would start the run on them the moment the task is gone. Its cause: those
// nodes (a hostlist), which the keep-off action adds to the queued job's list (the crash's first).
std::optional<Finding> queued_restart_misses(const std::string& label, const QueuedRestart& queued,
                                             const std::vector<SlurmJob>& entries,
                                             const std::vector<std::string>& suspects,
                                             const std::vector<std::string>& new_offenders = {});

// "restart-after-cancel" (a warning): the task a restart was queued behind was cancelled, not by
// llmwatch (a person meant to stop the run, most likely), and Slurm, for which a cancel is as
// much a failure as a crash (`afternotok` cannot tell them apart), starts the queued run in its
// place. Only a person can say which was meant: the finding names the job to cancel. For the
// post-mortem made this cycle only (told once).
std::optional<Finding> restart_after_cancel(const std::string& label, const QueuedRestart& queued,
                                            const PostMortem& ended, bool cancelled_by_llmwatch,
                                            const std::vector<SlurmJob>& entries);

}  // namespace llmwatch

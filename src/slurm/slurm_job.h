#pragma once
// One job (or one array task, or the pending remainder of an array) as squeue reports it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "util/result.h"

namespace llmwatch {

struct SlurmJob {
  std::int64_t job_id = 0;
  std::int64_t array_job_id = 0;              // 0: not an array
  std::optional<std::int64_t> array_task_id;  // a single task; nullopt for the pending remainder
  std::string array_task_string;              // pending remainder, e.g. "2-10%1"
  int array_max_tasks = 0;                    // the %N throttle
  std::string name, user, account, partition;
  std::string group;   // the group the task runs as (Slurm's group_name / GroupId)
  std::string state;   // RUNNING, PENDING, COMPLETING, ...
  std::string reason;  // state_reason: Priority, JobArrayTaskLimit, ...
  // Slurm's words beside the reason (state_description): JSON gives a launch failure as
  // JobHeldUser with "launch failed requeued held" here; the text format prints the words alone.
  std::string reason_detail;
  std::string required_nodes;  // ReqNodeList: the nodes it must run on ("" for any)
  // ExcNodeList: the nodes it must not run on, a hostlist ("" for none). Unknown (nullopt)
  // where the format does not say: squeue's text has no field for it beside the others.
  std::optional<std::string> excluded_nodes;
  int restarts = 0;  // restart_cnt: how often Slurm requeued it
  std::string nodes, batch_host;
  std::string std_out, std_err;  // with %x/%j/%A/%a patterns still in them
  std::string command, workdir;
  std::int64_t submit_time = 0, start_time = 0;
  int node_count = 0;
  // The GPUs Slurm gave it (its allocated TRES' gres/gpu; for a pending entry, those asked
  // for); 0 when Slurm did not say (a cluster without GPU GRES, or an older record).
  int gpus = 0;
  std::int64_t time_limit_minutes = 0;  // 0: none (UNLIMITED)

  bool is_array() const { return array_job_id != 0; }
  // What users type and see: "3_1", "3_[2-10%1]", "5".
  std::string display_id() const;
  // This task as one run of it: "3_1@1800000000". A requeue keeps the id but starts anew.
  std::string run_key() const { return display_id() + "@" + std::to_string(start_time); }
  // The id scontrol takes for exactly this entry: "3_[2-10]" for a pending array remainder
  // (the bare array id would also hit finished tasks and fail), else display_id().
  std::string control_id() const;
  bool running() const {
    return state == "RUNNING" || state == "COMPLETING" || state == "CONFIGURING";
  }
  // Slurm is ending it (a crash, a cancel, a requeue or a preemption): what it prints now is
  // the end's doing, judged from its end, not by the live rules.
  bool ending() const { return state == "COMPLETING"; }
  bool pending() const { return state == "PENDING" || state == "REQUEUED"; }
  // Still the run's, though neither running nor pending: suspended, stopped, held after a
  // requeue, being resized or signalled. Such a job is not "absent" and is never restarted.
  bool paused() const {
    return state == "SUSPENDED" || state == "STOPPED" || state == "REQUEUE_HOLD" ||
           state == "REQUEUE_FED" || state == "RESIZING" || state == "SIGNALING" ||
           state == "STAGE_OUT" || state == "SPECIAL_EXIT";
  }
  bool present() const { return running() || pending() || paused(); }
  // Held by Slurm after its batch launch failed on a node (a prolog error, a slurmd that could
  // not start it): it waits for a person to release it, however long that takes.
  bool launch_failed() const;
  // The reason as squeue's text prints it: Slurm's words where it has them ("launch failed
  // requeued held" for JobHeldUser), else the reason.
  std::string reason_shown() const;
};

// The run's task among one [[job]]'s queue entries: the first running one Slurm is not
// ending, else the first ending one, else none. A cancelled task can stay COMPLETING for
// minutes beside its restart (an epilog, a process stuck in D state), and squeue lists it first.
const SlurmJob* running_task(const std::vector<SlurmJob>& entries);

struct SqueueParse {
  std::vector<SlurmJob> jobs;
  std::string error;  // set when the text is not a squeue --json document
  // Seconds since slurmctld gave this answer: 0 when asked this cycle, more when a wake replays
  // its tick's answer. The states it holds are known up to then, not up to now.
  double age_s = 0;
  bool ok() const { return error.empty(); }
};

// Which queue entries a cycle needs: the watched jobs (by name, or job/array id) and
// llmwatch's own. Parsing drops the rest early: with 100,000 queued jobs a cycle looks at its
// own few, and building 100,000 SlurmJobs dominated it.
struct JobFilter {
  // Looked up by view (is_transparent): every line of a 100,000-job queue asks, and a string
  // made for each was a tenth of the parse.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_set<std::string, NameHash, std::equal_to<>> names;
  std::unordered_set<std::int64_t> ids;
  bool wants(std::string_view name, std::int64_t job_id, std::int64_t array_job_id) const {
    return names.contains(name) || ids.count(job_id) || (array_job_id && ids.count(array_job_id));
  }
};

// `squeue --json` (Slurm 21.08–22.05 shape; tolerant of newer list-valued state fields).
// With a filter, only the entries it wants are kept.
SqueueParse parse_squeue_json(std::string_view text, const JobFilter* filter = nullptr);

struct SlurmListReader;
// The same, fed in pieces as squeue prints them (SlurmClient reads the pipe into it): only
// the job being read is held, never the document. The filter must outlive the reader.
class SqueueJsonReader {
 public:
  explicit SqueueJsonReader(const JobFilter* filter = nullptr);
  ~SqueueJsonReader();
  SqueueJsonReader(const SqueueJsonReader&) = delete;
  SqueueJsonReader& operator=(const SqueueJsonReader&) = delete;
  void feed(std::string_view piece);
  std::size_t bytes() const;  // fed so far
  SqueueParse finish();

 private:
  SqueueParse out_;
  std::unique_ptr<SlurmListReader> reader_;
};

// The GPUs in a TRES string ("cpu=16,mem=64G,node=2,billing=16,gres/gpu=16"): its gres/gpu, or
// the sum of its typed counts (gres/gpu:h100=8) when Slurm lists only those; 0 when none.
int gpus_in_tres(std::string_view tres);

// For remembering the last run of a watched job across cycles (the restart action needs it
// after the job has left the queue).
std::string slurm_job_to_json(const SlurmJob& job);
std::optional<SlurmJob> slurm_job_from_json(const std::string& text);

// Expands Slurm filename patterns (%x %j %A %a %u %N %%, with optional zero padding "%4a").
// What squeue's details of several tasks tell, by task id, keyed as `scontrol show job` keys
// them (slurm_text.h, parse_job_details).
using JobDetails = std::map<std::string, std::map<std::string, std::string>>;

std::string expand_slurm_pattern(const std::string& pattern, const SlurmJob& job);
// The log a job writes to: its StdOut, or Slurm's default name in its workdir.
std::string job_stdout_path(const SlurmJob& job);
// A run key (SlurmJob::run_key: a task id, digits and one '_', and its start) as a file name's
// stem: "7_3@1700000000" names "7_3-1700000000".
std::string run_key_file_stem(std::string run_key);
// Its StdErr where that is a file of its own; "" where it goes to StdOut's.
std::string job_stderr_path(const SlurmJob& job);

// The group a step or a resubmission runs as on the owner's behalf: the task's own group,
// else the owner's primary group; "" when neither is known. Never root's group for another
// user: `sbatch --uid` without --gid left a restarted run in group root (GroupId=root(0)), and
// a run restarted that way must not hand it on.
std::string owner_group(const SlurmJob& job);

// The --uid and --gid that make a step or a resubmission run as the task's owner, in the
// task's group, when llmwatch runs as root (slurmctld lets no one else start a step in a
// user's job, and --uid alone is root's group). None when llmwatch is not root or the task is
// root's own; an error when the owner or the group is unknown: never root's identity on
// someone's behalf. Shared by restart, dump and the node-checks run inside users' jobs.
Result<std::vector<std::string>> owner_identity_args(const SlurmJob& job);

// srun's options for a step of one task on each node of the running task `job`, beside its own
// steps (--overlap) and never ending it (--kill-on-bad-exit=0), srun's own chatter off, each line
// labelled with its task (read with srun_output_by_task), then `llmwatch stacks --job ID`: the
// dump and the look for a crashed rank's process run it so.
std::vector<std::string> stacks_step_args(const SlurmJob& job);

}  // namespace llmwatch

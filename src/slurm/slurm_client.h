#pragma once
// Every call llmwatch makes to Slurm, each through run_process with a timeout. Nothing here
// decides anything: callers get the parsed answer or a one-line error naming the command.
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"
#include "util/result.h"
#include "util/subprocess.h"

namespace llmwatch {

struct SubmitResult {
  std::optional<std::int64_t> job_id;
  std::string error;
};

class SlurmClient {
 public:
  explicit SlurmClient(SlurmSettings settings);
  virtual ~SlurmClient() = default;

  // One `squeue --json` for every job: 22.05 ignores filters anyway, so we filter here.
  virtual SqueueParse queue();
  // From now on queue() keeps only what the filter wants (the supervisor's watched jobs).
  void set_filter(JobFilter filter) { filter_ = std::move(filter); }
  const JobFilter* filter() const { return filter_ ? &*filter_ : nullptr; }
  // One `sinfo --json` per cycle: every node, its state flags and reason.
  virtual SinfoParse nodes();
  // `scancel [--signal=SIG] ID`.
  virtual Status cancel(const std::string& job_id, const std::string& signal = "");
  // own_job: llmwatch's own successor, the one submission that inherits llmwatch's
  // environment (its config's ${VARS}); every other sbatch gets a scrubbed one.
  virtual SubmitResult submit(const std::vector<std::string>& sbatch_args,
                              const std::map<std::string, std::string>& env = {},
                              bool own_job = false);
  // `scontrol hold|release|requeue ID`.
  virtual Status control(const std::string& verb, const std::string& job_id);
  // `scontrol update JobId=ID ExcNodeList=NODES`: the nodes a pending task must not start on
  // (Slurm refuses it for a running one). NODES replaces the task's list: callers merge.
  virtual Status set_excluded_nodes(const std::string& job_id, const std::string& nodes);

  // The tasks named `name` of `user` (every user's when empty) as Slurm lists them now, ended
  // ones too while it still does: one `squeue --name`, in text (a few lines). Asked by a restart
  // made on a queue read earlier (a wake replays its tick's answer), which cannot list a run
  // resubmitted by hand since. squeue splits a name at commas: the caller keeps exact names.
  virtual SqueueParse tasks_named(const std::string& name, const std::string& user);
  // `scontrol show job ID` as key/value pairs (text mode fills StdOut/Command/WorkDir from it).
  virtual std::map<std::string, std::string> show_job(const std::string& job_id);
  // `scontrol write batch_script ID -`: the batch script Slurm keeps for a job while it knows it
  // (its text, "#!..."), for a job submitted with no script file (sbatch --wrap, or a script
  // on sbatch's stdin: Command=(null)).
  virtual Result<std::string> batch_script(const std::string& job_id);
  // What `show_job` tells of a running task's files, for many tasks in one squeue call
  // (slurm_text.h, parse_job_details), keyed by task id; StdOut and StdErr are Slurm's
  // patterns, expanded by the caller. An error names the command; a task Slurm no longer
  // lists is absent.
  virtual Result<JobDetails> job_details(const std::vector<std::string>& task_ids);
  // `sacct`, for a task slurmctld may already have forgotten (MinJobAge): its allocation's
  // record (State, ExitCode, NodeList, NNodes, Reason, Start, End; slurm_text.h), the one that
  // started at `started` when the id was requeued. Empty where the cluster keeps no accounting,
  // the task is not there, or sacct fails: the caller knows no more than before.
  virtual std::map<std::string, std::string> accounting(const std::string& job_id,
                                                        std::int64_t started);
  // `scontrol show node NAME` as key/value pairs (Reason, State, ...); empty when unknown.
  virtual std::map<std::string, std::string> show_node(const std::string& node);
  // `scontrol update nodename=NAME state=STATE [reason=REASON]`.
  virtual Status update_node(const std::string& node, const std::string& state,
                             const std::string& reason = "");
  // `scontrol reboot ASAP nextstate=RESUME reason=REASON NAME`: Slurm drains the node, reboots
  // it once idle (needs RebootProgram in slurm.conf) and returns it to service.
  virtual Status reboot_node(const std::string& node, const std::string& reason);
  // `srun ARGS` (a step in an existing allocation); the raw result, for node-check collection.
  virtual ProcessResult run_step(const std::vector<std::string>& args, Seconds timeout);
  bool text_mode() const { return text_mode_; }
  // The format chosen in an earlier cycle (kept in the store): an "auto" client starts there.
  void use_text_mode() {
    if (settings_.format == "auto") text_mode_ = true;
  }

  int calls() const { return calls_; }  // for the command-budget benchmark

 protected:
  template <class Parse, class Reader>
  Parse read(const std::string& tool, Reader& json_reader, std::vector<std::string> text_args,
             const std::function<Parse(std::string_view)>& parse_text);
  // Above this, JSON costs too much CPU per cycle and the text format is used from the
  // next cycle on.
  static constexpr std::size_t kJsonTooBig = 64u << 20;
  // The text format of 100,000 jobs is ~15 MiB: this leaves room for 1.5 million.
  static constexpr std::size_t kTextCap = 256u << 20;
  ProcessResult run(const std::string& tool, std::vector<std::string> args,
                    const std::map<std::string, std::string>& env = {},
                    std::size_t max_output = 16u << 20, bool inherit_environment = false,
                    std::function<void(std::string_view)> on_out = {});

 private:
  SlurmSettings settings_;
  std::atomic<int> calls_{0};  // probes call from several threads
  std::optional<JobFilter> filter_;
  // queue() and nodes() run concurrently in a cycle, so this flag is atomic.
  std::atomic<bool> text_mode_{
      false};  // set once --json proved unsupported (or [slurm] format = "text")
};

}  // namespace llmwatch

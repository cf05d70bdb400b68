#pragma once
// The llmwatch subcommands. Each returns the process exit code:
//   0 success (and "another llmwatch holds the lease", which is not an error)
//   1 runtime failure (state store unusable, Slurm refused a submission, ...)
//   2 bad usage or invalid configuration
//   3 (status --check) something needs attention
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"

namespace spdlog {
class formatter;
}

namespace llmwatch {

enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitAttention = 3 };

// Loads the config or prints every error as "file:line: message" and returns nullopt.
std::optional<Config> load_or_report(const std::string& path);
std::string default_config_path();

int cmd_run_once(const Config& config);
// Cycles on a timer until SIGTERM/SIGINT, or for `run_for` when it is above 0 (a run of the
// self-perpetuating job with [self] span).
int cmd_daemon(const std::string& config_path, Config config, const std::string& listen,
               Seconds run_for = Seconds(0));
int cmd_status(const Config& config, bool json, bool watch = false, bool check = false);
int cmd_nodes(const Config& config, bool json, const std::string& node = "");
int cmd_job_view(const Config& config, const std::string& job, bool json);
int cmd_config_check(const std::string& path);
int cmd_events(const Config& config, const std::string& since, const std::string& job, bool json);
int cmd_submit(const Config& config, const std::string& interval);
// `goodput`: where the GPU-hours of the watched runs went (#29), grouped by cause, node, job
// or day; a one-file HTML report with --html.
int cmd_goodput(const Config& config, const std::string& since, const std::string& by, bool json,
                const std::string& html);
// facts: model facts for training-log figures (tokens/s, MFU), as in a [[job]].
int cmd_inspect(const std::string& kind, const std::string& file, const JobSettings& facts);
int cmd_demo(bool keep);
int cmd_silence(const Config& config, const std::string& verb, const std::string& pattern,
                const std::string& duration, const std::string& reason, std::int64_t id);
// `stacks --job J`: this node's Python stacks of job J (hang forensics, run through srun).
int cmd_stacks(const std::string& job_id, double timeout_seconds);
// `stacks --job J --ranks`: which rank each of job J's Python processes on this node is, from
// its environment; nothing is stopped (probes/rank_processes.h).
// Which ranks are looked into for an exit, besides which run: the one a fatal line named
// (`rank`, srun's task where `by_task`), or each of them (`every`, a line that named none).
// `stacks`: each rank's own process's Python stack too, from the same gdb (the hang's first
// dump, taken by the look).
struct ExitLook {
  std::optional<int> rank;
  bool by_task = false;
  bool every = false;
  bool stacks = false;
};
int cmd_stack_ranks(const std::string& job_id, const ExitLook& look);
int cmd_job_action(const Config& config, const std::string& verb, const std::string& job);
// Every command's answer to a name that is no [[job]]: "'x' is not a [[job]] in FILE", and
// "; did you mean 'y'?" when a configured job's label is close (#27).
std::string not_a_job(const Config& config, const std::string& label);

struct NodeCheckOptions {
  std::string node;   // default: $SLURMD_NODENAME, else the short hostname
  bool json = false;  // one llmwatch.node-check/1 document
  bool drain_self =
      false;               // CRITICAL: scontrol update this node state=drain reason="llmwatch: ..."
  std::string output_dir;  // also write <dir>/<node>.json (for the supervisor)
  bool ack = false;        // acknowledge the Xids now in the kernel log (after a repair)
  bool save_state = true;  // false: read the node's state, never write it (--print-only)
  bool follow = false;     // check again every `every` seconds until SIGTERM
  double every = 1;
};
// Exit code: Nagios (0 OK, 1 WARN, 2 CRITICAL, 3 UNKNOWN).
int cmd_node_check(const Config& config, const NodeCheckOptions& options);

void setup_logging(const std::string& format, bool verbose);
// The text log's line format, with every message made terminal-safe (util/text.h).
std::unique_ptr<spdlog::formatter> text_log_formatter();

}  // namespace llmwatch

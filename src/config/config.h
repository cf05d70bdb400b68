#pragma once
// llmwatch's configuration, as loaded from TOML (see conf/llmwatch.toml for every key).
// Plain data: validation happens in config_load.cpp, against config_schema.cpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/units.h"

namespace llmwatch {

struct SlurmSettings {
  std::string bin_dir;              // where squeue/sbatch/... live; empty: PATH
  Seconds timeout{30};              // per Slurm command
  int unreachable_alert_after = 3;  // consecutive failed cycles before an alert
  std::string format = "auto";      // auto | json | text (auto: JSON, text if --json is unknown)
};

// The self-perpetuating llmwatch job (`llmwatch submit`).
struct SelfJobSettings {
  std::string job_name = "llmwatch";
  std::string partition, account, qos;
  std::string time_limit = "00:15:00";
  Seconds interval{600};
  // How long each run supervises, as the daemon does (a cycle every [llmwatch] interval, a wake
  // at a job's hang allowance, a crash line bringing a cycle forward), before its successor
  // takes over. 0: one cycle a run. Holds the run's CPU for the span: see the README.
  Seconds span{0};
  std::string output;               // sbatch --output; default <state_dir>/logs/llmwatch-%j.out
  std::string deadman_url;          // pinged (GET) after each cycle; secret
  Seconds log_max_age{14 * 86400};  // llmwatch's own job logs older than this are removed
};

struct Limits {
  int max_restarts_per_hour = 10;  // across all jobs
  int max_cancels_per_hour = 10;
  int max_drains_per_hour = 4;
};

struct JobSettings {
  std::string name;                // Slurm job name to follow
  std::optional<std::int64_t> id;  // or a job id
  std::string user, account, partition;
  std::vector<std::string> logs;       // paths or globs; default: the job's StdOut
  std::optional<Seconds> stale_after;  // nullopt: adaptive
  double stale_factor = 4;             // adaptive: factor × longest step interval after warm-up
  // Once the run's step interval is learned the allowance is stale_factor x its longest step
  // (or silence of its log), at least stale_floor: with 10 s steps a hang is found ~46 s after
  // the last step (progress is clocked at the log's write, and the daemon wakes at the
  // deadline). The floor is not what keeps healthy runs safe: startup, the first steps,
  // checkpoint and evaluation phases get their own grace, the allowance adapts to the longest
  // step and silence seen, and a hang is confirmed by two dumps before it is cancelled
  // (confirm_hang). Shown on the replay corpus in tests/fixtures/hang-corpus: 0 false findings
  // at factor 4 and floor 45 s (a 40 s floor calls a healthy irregular run hung).
  Seconds stale_floor{45};
  Seconds stale_ceiling{7200};
  // How long a learned step interval counts towards the allowance: the longest of the last
  // hour's, so one healthy hiccup (a slow shard read, a congested collective) does not make
  // every later hang of the task wait stale_factor x that hiccup (#30: 160 s, not 45 s, two hours
  // after a 40 s wait). 0: the longest of the whole task, as before.
  Seconds stale_memory{3600};
  // dump confirms a hang: a second dump this long after the first, in a later cycle; stacks
  // that moved make it a near miss (no cancel or restart, the hang clock restarts), once until
  // the run steps again. Nothing is cancelled on time alone. 0: off.
  Seconds confirm_hang{10};
  Seconds startup_grace{1800};  // until the first step line
  // Between the first steps of a task, until its step interval is learned: cold page caches,
  // data-loader warm-up, the first collectives (the floor applies if it is longer).
  Seconds first_steps_grace{120};
  Seconds checkpoint_grace{1800};  // after a "saving checkpoint" line
  Seconds evaluation_grace{1800};  // after an evaluation pass starts printing
  std::string kill_switch, save_switch;
  Seconds kill_grace{1800};  // a kill switch older than this, with tasks queued, was forgotten
  // Stacks first (hang forensics: where every rank waits), then cancel and restart.
  std::vector<std::string> on_hang{"dump", "alert", "cancel", "restart"};
  std::vector<std::string> on_absent{"alert"};
  // A run that crashed (caught in its log, or classified once it ended) is restarted by
  // default, off the nodes attribution names, within max_restarts and the crash-loop hold.
  std::vector<std::string> on_crash{"alert", "restart"};
  std::vector<std::string> on_timeout{"alert", "restart"};  // ended at its time limit
  // A task this close to its time limit, with no checkpoint saved within that time, is asked
  // to save (on_time_limit) so the continued run loses little; 0 turns it off.
  Seconds save_before_limit{900};
  std::vector<std::string> on_time_limit{"save"};
  std::vector<std::string> on_crash_loop{"hold", "alert"};
  // Slurm held a task after its launch failed on a node it then drained (rules/launch_failure.h):
  // released, it starts elsewhere; else it waits for a person.
  std::vector<std::string> on_launch_failed{"relaunch", "alert"};
  // A node of the running task turned CRITICAL ([gpu]): it is drained, the task restarted
  // elsewhere. A node that only needs a reset when idle (row remap pending): checkpoint now.
  std::vector<std::string> on_node_fault{"cancel", "restart", "alert"};
  std::vector<std::string> on_node_degraded{"save", "alert"};
  // Tasks in a row that die before their first step, or end at the same step (a step loop).
  int crash_loop_after = 3;
  int max_restarts = 5;
  Seconds restart_window{6 * 3600};
  std::string progress_regex;  // a user regex whose first group is the step

  // Model facts, for tokens/s, MFU and ETA (all optional).
  double seq_length = 0, global_batch_size = 0, gpus = 0;
  std::string gpu, precision = "bf16";
  double peak_tflops = 0;             // overrides the table for gpu + precision
  double model_flops_per_sample = 0;  // or the architecture:
  double layers = 0, hidden_size = 0, ffn_hidden_size = 0, attention_heads = 0, query_groups = 0,
         vocab_size = 0;
  bool gated_mlp = true;
  std::int64_t max_steps = 0;  // 0: as printed in the log
  double train_tokens = 0;     // for "time to train N tokens"

  // Training-health detectors.
  double slowdown_percent = 0.2;   // step time this much above the run's median...
  int slowdown_steps = 5;          // ...for this many steps in a row
  double loss_spike_factor = 1.5;  // loss above its moving median by this factor
  std::vector<std::string> on_slowdown{"alert"};
  std::vector<std::string> on_loss_spike{"alert"};
  std::vector<std::string> on_nan{"alert"};

  // Slow-node localisation (#28): per-rank section times from llmwatch_timing.py.
  std::string timing_dir;  // "": off; where rank-<N>.jsonl files are written
  // Or per-rank compute from Megatron-LM's "times across ranks (ms):" blocks in the job's
  // own log (probes/megatron_rank_times.h); timing_dir wins when both are set.
  bool timing_from_log = false;
  double straggler_speed = 0.85;  // a node this much slower than its peers is a suspect
  // "alert": say which node and what evicting it would save; "evict": save, cancel, restart
  // without it and drain it, only when the saving beats the measured restart cost.
  std::string on_straggler = "alert";
  double evict_margin = 0.5;  // the saving must exceed the restart cost by this share
  // ...and the node must have stayed slow this long: a short fail-slow ends by itself, and
  // evicting it only pays a restart (bench/straggler_bench.cpp: 56% of slowed time removed
  // net at 0, 61% at 10 min, over the same runs).
  Seconds evict_after{600};
  int line = 0;  // where the entry starts in the file
};

struct StorageSettings {
  std::string path;
  double usable_fraction = 1.0;
  double warn_used = 0.85, critical_used = 0.95;
  std::uint64_t min_free = 0;
  double warn_inodes_used = 0.85;
  Seconds min_hours_left{12 * 3600};
  // Checkpoint awareness (optional): the directory a run saves into.
  std::string checkpoint_dir;
  std::string checkpoint_glob = "*";  // which entries are checkpoints
  int keep_last = 0;            // cleanup: keep this many newest (never fewer than 2); 0 = off
  bool cleanup_dry_run = true;  // cleanup only says what it would delete
  std::string quota = "none";   // none | lfs | mmlsquota | beegfs | quota | custom
  std::vector<std::string> quota_command;  // argv; e.g. ["lfs", "quota", "-u", "bob", "/lustre"]
  std::string quota_regex;                 // custom: two groups, used and limit (with units)
  Seconds quota_timeout{30};
  int line = 0;
};

struct GpuSettings {
  bool enabled = false;  // supervisor: collect node verdicts and act on them
  // --- node-check (runs on a compute node) ---
  int expected_gpus = 0;                  // GPUs a node must show; 0: do not check
  std::string xid_table;                  // "": the built-in copy of conf/xid.toml
  std::string kernel_log = "kmsg";        // kmsg | journalctl | dmesg | file | none
  std::string kernel_log_path;            // for "file"; "{node}" is replaced by the node name
  std::string nvidia_smi = "nvidia-smi";  // program; "": do not run it
  Seconds nvidia_smi_timeout{20};
  bool nvlink = true;            // nvidia-smi nvlink -s
  std::string dcgmi_diag_level;  // "1" | "2" | "3"; "": do not run dcgmi diag
  // dcgmi diag's performance figures (GFLOP/s, stress level, PCIe GB/s: DcgmiDiag::figures)
  // against the fleet's: a node under this × the median, beyond the spread, is a warning. 0: off.
  double dcgmi_fleet_below = 0.85;
  bool dcgmi_health = false;  // dcgmi health -c
  bool dcgmi_dmon = false;    // dcgmi dmon -c 1: GPU telemetry where DCGM is present
  std::string dcgmi = "dcgmi";
  Seconds dcgmi_timeout{45};
  std::string node_state_dir = "/var/lib/llmwatch/node";  // node-check's acknowledgements
  // Thresholds.
  double ecc_uncorrected_critical = 1;  // volatile uncorrected ECC errors
  double retired_pages_critical = 50;   // double-bit retired pages (pre-Ampere)
  bool pcie_width_check = true;         // link narrower than its maximum: WARN
  double temperature_warn = 0;          // °C; 0: off (hw thermal slowdown is checked anyway)
  // --- supervisor side ---
  std::string collect = "results";  // results | srun | both
  // collect = "results": a watched job's new task (a restart) gets node-check in its new
  // allocation once, in the first cycle that sees it (#30).
  bool check_new_allocations = true;
  std::string results_dir;      // where node-checks write <node>.json (shared filesystem)
  Seconds result_max_age{900};  // an older result is not evidence of anything
  std::string manage_nodes;     // hostlist llmwatch may drain/undrain; "": nodes of watched jobs
  Seconds idle_check_every{0};  // idle managed nodes run node-check as a short job; 0: off
  double max_drained_fraction = 0.1;  // of a partition (of all nodes when unknown)
  std::vector<std::string> on_critical{"drain", "alert"};
  // A GPU a reset heals (reset-class Xid, pending row remap): Slurm's reboot ASAP returns it to
  // service by itself. Empty: such nodes get on_critical (CRITICAL) or an alert (WARN).
  std::vector<std::string> on_reset{"reboot", "alert"};
  bool undrain = true;                    // undrain what llmwatch drained once checks pass
  bool undrain_kill_task_failed = false;  // also "Kill task failed" with no GPU processes left
  int lemon_failures = 3;                 // job failures + GPU faults in lemon_window
  Seconds lemon_window{7 * 86400};
};

// A config value of any kind, as the loader converted it (the kind comes from its key).
struct ConfigValue {
  std::string s;
  bool b = false;
  std::int64_t i = 0;
  double d = 0;
  Seconds dur{0};
  std::uint64_t size = 0;
  bool is_auto = false;
  std::vector<std::string> list;
};

// [[alert.TYPE]]: what every channel shares. The type's own keys (url, to, command ...) are in
// `options`, declared and validated by the channel's own file (config/channel_catalogue.h).
struct AlertChannel {
  std::string type;  // a registered channel type: slack, email, webhook, exec, alertmanager ...
  std::string name;
  std::vector<std::string> match{"*"};  // finding-key globs this channel receives
  std::string min_severity = "warning";
  Seconds timeout{10};
  std::map<std::string, ConfigValue> options;
  int line = 0;
  std::string id;  // name, or "type#N": how deliveries refer to the channel

  const ConfigValue* option(const std::string& key) const {
    auto it = options.find(key);
    return it == options.end() ? nullptr : &it->second;
  }
  std::string text(const std::string& key) const { return option(key) ? option(key)->s : ""; }
  std::vector<std::string> list(const std::string& key) const {
    return option(key) ? option(key)->list : std::vector<std::string>{};
  }
  bool flag(const std::string& key, bool fallback) const {
    return option(key) ? option(key)->b : fallback;
  }
  Seconds duration(const std::string& key, Seconds fallback) const {
    return option(key) ? option(key)->dur : fallback;
  }
};

// [[check]]: an operator's Nagios-style plugin, run on llmwatch's host. Its exit status is
// the verdict: 0 OK, 1 WARNING, 2 CRITICAL, 3 (or a timeout, a crash) UNKNOWN; the first line it
// prints is the summary. A finding "check:<name>/status" fires for 1 and 2 (alert).
struct CommandCheckSettings {
  std::string name;
  std::vector<std::string> command;  // argv, no shell
  Seconds every{300};                // at most this often; the last verdict stands between runs
  Seconds timeout{30};
  // "here": on llmwatch's host, by the supervisor. "nodes": by node-check on each node it
  // runs on (srun into the watched jobs, the quick check after a crash, an epilog), so that
  // a CRITICAL is that node's verdict and may drain it, within the drain limits.
  std::string where = "here";
  // What a CRITICAL from a node means: drain ([gpu] on_critical), reset ([gpu] on_reset: a
  // reboot), none (the verdict is shown and alerted, no node action).
  std::string hint = "drain";
  // Perfdata labels of this check's figure where higher is better (a GEMM's "gflops", a
  // bandwidth): a node's figure under fleet_below × the fleet's median, and beyond its spread,
  // is a warning (rules/fleet_figures.h). Needs where = "nodes".
  std::vector<std::string> fleet_compare;
  double fleet_below = 0.85;
  int line = 0;
};

struct Config {
  std::string path;  // the file it came from ("<embedded>" for the demo)
  std::string state_dir = "/var/lib/llmwatch";
  Seconds interval{30};  // 2 RPCs to slurmctld per cycle (one squeue, one sinfo)
  Seconds lease_ttl{900};
  // Past this, a cycle starts no more actions; past it plus a grace of a quarter of it, the
  // process exits so that the lease passes on (cmd_run's watchdog).
  Seconds cycle_deadline{120};
  bool dry_run = false;
  std::string log_format = "text";  // text | json
  std::string metrics_file;         // Prometheus textfile; empty: off
  Seconds probe_timeout{60};
  // A log read, stat, glob, statvfs or checkpoint scan taking longer is a hung mount: unknown.
  Seconds file_timeout{10};
  Seconds alert_repeat_every{6 * 3600};  // a still-firing alert is repeated this often
  int resolve_after_cycles = 2;          // hysteresis: absent this many cycles before "resolved"
  Seconds alert_retry_backoff{30};       // first retry of a failed delivery; doubles up to 1h
  Seconds keep_history{30 * 86400};      // events, progress, cycles older than this are dropped
  SlurmSettings slurm;
  SelfJobSettings self;
  Limits limits;
  std::vector<JobSettings> jobs;
  std::vector<StorageSettings> storage;
  std::vector<CommandCheckSettings> checks;
  GpuSettings gpu;
  std::vector<AlertChannel> alerts;
};

struct ConfigError {
  std::string file;
  int line = 0;
  std::string message;
  std::string str() const;  // "file:line: message"
};

struct ConfigResult {
  std::optional<Config> config;
  std::vector<ConfigError> errors;
};

ConfigResult load_config_file(const std::string& path);
ConfigResult load_config_string(const std::string& text, const std::string& source_name);

}  // namespace llmwatch

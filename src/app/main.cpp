// llmwatch: a watchdog and fault-tolerance supervisor for LLM training on Slurm.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "app/detached_worker.h"
#include "app/process_memory.h"
#include "config/action_catalogue.h"
#include "util/units.h"

using namespace llmwatch;

int main(int argc, char** argv) {
  limit_malloc_arenas();
  CLI::App app{"llmwatch " LLMWATCH_VERSION
               " — watches Slurm training jobs, decides, acts safely, and tells people.\n"
               "Exit codes: 0 ok (also: another instance holds the lease), 1 runtime failure,\n"
               "2 bad usage or invalid config. status --check follows Nagios: 0 ok, 1 warning,\n"
               "2 critical firing, 3 not supervising (stale or never ran)."};
  app.set_version_flag("--version", std::string("llmwatch ") + LLMWATCH_VERSION);
  app.require_subcommand(1);
  std::string config_path = default_config_path();
  std::string log_format = "text";
  bool verbose = false;
  app.add_option("-c,--config", config_path,
                 "config file (default: $LLMWATCH_CONFIG or /etc/llmwatch/llmwatch.toml)");
  app.add_option("--log-format", log_format, "text or json (for log shippers)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("-v,--verbose", verbose, "debug logging");

  auto* run = app.add_subcommand("run", "run supervision cycles");
  bool once = false;
  run->add_flag("--once", once, "run exactly one cycle (cron / self-perpetuating job)")->required();

  auto* daemon = app.add_subcommand(
      "daemon", "run cycles on a timer until SIGTERM/SIGINT; SIGHUP reloads the config");
  std::string listen;
  std::string run_for;
  daemon->add_option("--for", run_for,
                     "stop after this long (e.g. 14m), after the cycle then running");
  daemon->add_option("--listen", listen,
                     "serve /metrics and /healthz on ADDR:PORT (e.g. 127.0.0.1:9464)");

  auto* status = app.add_subcommand("status", "everything at a glance");
  bool status_json = false;
  status->add_flag("--json", status_json, "machine-readable output (schema llmwatch.status/1)");
  bool status_watch = false;
  status->add_flag("--watch", status_watch, "redraw every 2 s until Ctrl-C");
  bool status_check = false;
  status->add_flag("--check", status_check,
                   "one Nagios line; exit 0 ok, 1 warning, 2 critical, 3 not supervising");
  auto* nodes = app.add_subcommand(
      "nodes", "nodes that are drained or down, with reasons (from the last cycle)");
  bool nodes_json = false;
  std::string nodes_node;
  nodes->add_flag("--json", nodes_json, "machine-readable output");
  nodes->add_option("node", nodes_node, "one node: its GPU health history");

  auto* job_view = app.add_subcommand(
      "job", "one run across its restarts: figures, failures, lost time, advice");
  std::string view_job;
  bool job_json = false;
  job_view->add_option("job", view_job, "a [[job]] name")->required();
  job_view->add_flag("--json", job_json, "machine-readable output");

  auto* silence =
      app.add_subcommand("silence", "mute notifications for matching findings for a while");
  silence->require_subcommand(1);
  std::string silence_pattern, silence_for = "4h", silence_reason;
  std::int64_t silence_id = 0;
  auto* silence_add = silence->add_subcommand("add", "silence a finding key or glob (job:tr11/*)");
  silence_add->add_option("pattern", silence_pattern, "finding key or glob")->required();
  silence_add->add_option("--for", silence_for, "how long (default 4h)");
  silence_add->add_option("--reason", silence_reason, "why (shown in list and events)")->required();
  auto* silence_list = silence->add_subcommand("list", "active silences");
  auto* silence_remove = silence->add_subcommand("remove", "end a silence");
  silence_remove->add_option("id", silence_id, "silence number")->required();

  auto* config = app.add_subcommand("config", "configuration tools");
  config->require_subcommand(1);
  auto* check = config->add_subcommand("check", "validate a config file; exit 2 on error");
  std::string check_file;
  check->add_option("file", check_file, "file to check (default: --config)");

  auto* events = app.add_subcommand("events", "the event history");
  std::string since = "24h", job;
  bool events_json = false;
  events->add_option("--since", since, "how far back (e.g. 2h, 7d)");
  events->add_option("--job", job, "only this watched job");
  events->add_flag("--json", events_json, "one JSON object per line");

  auto* goodput = app.add_subcommand("goodput", "where the GPU-hours of the watched runs went");
  std::string goodput_since = "30d", goodput_by = "cause", goodput_html;
  bool goodput_json = false;
  goodput->add_option("--since", goodput_since, "how far back (e.g. 7d, 30d)");
  goodput->add_option("--by", goodput_by, "group the losses by")
      ->check(CLI::IsMember({"cause", "node", "job", "user", "day"}));
  goodput->add_flag("--json", goodput_json, "the report as one JSON object");
  goodput->add_option("--html", goodput_html, "also write a one-file HTML report here");

  auto* submit = app.add_subcommand("submit", "start the self-perpetuating llmwatch Slurm job");
  std::string interval;
  submit->add_option("--interval", interval, "time between runs (default: [self] interval)");

  auto* inspect = app.add_subcommand(
      "inspect", "run one of llmwatch's parsers on a captured output, print JSON");
  std::string kind, file;
  inspect
      ->add_option(
          "kind", kind,
          "squeue-json | squeue-text | sinfo-json | sinfo-text | scontrol-show | hostlist "
          "| training-log | kmsg | nvidia-smi-csv | nvidia-smi-q | nvidia-smi-xml | nvlink "
          "| dcgmi-diag | dcgmi-health")
      ->required();
  inspect->add_option("file", file, "the captured output ('-' for stdin)")->required();
  JobSettings facts;
  inspect->add_option("--seq-length", facts.seq_length,
                      "training-log: sequence length (for tokens/s)");
  inspect->add_option("--gpus", facts.gpus, "training-log: number of GPUs (for MFU)");
  inspect->add_option("--gpu", facts.gpu, "training-log: GPU type, e.g. H100 (for MFU)");
  inspect->add_option("--precision", facts.precision, "training-log: bf16 or fp8 (for MFU)");
  inspect->add_option("--model-flops", facts.model_flops_per_sample,
                      "training-log: model FLOPs per sample");

  auto* node_check = app.add_subcommand(
      "node-check",
      "check this compute node's GPUs (Xid, ECC, row remap, NVLink, PCIe, dcgmi); exit 0 OK, "
      "1 WARN, 2 CRITICAL, 3 UNKNOWN (Nagios) — usable as Slurm HealthCheckProgram or epilog");
  NodeCheckOptions nc;
  node_check->add_option("--node", nc.node, "node name (default: $SLURMD_NODENAME, hostname)");
  node_check->add_flag("--json", nc.json, "one JSON document (schema llmwatch.node-check/1)");
  node_check->add_flag("--drain-self", nc.drain_self,
                       "on CRITICAL, drain this node with an 'llmwatch:' reason (never one "
                       "drained by someone else)");
  node_check->add_option("--output-dir", nc.output_dir,
                         "also write DIR/<node>.json (default: [gpu] results_dir)");
  bool print_only = false;
  node_check->add_flag("--print-only", print_only,
                       "write no results or node state, only print (the supervisor's srun reads "
                       "stdout; the step may run as the job's owner, who cannot write root's "
                       "directories)");
  node_check->add_flag("--ack", nc.ack,
                       "acknowledge the Xids now in the kernel log (after the GPU was repaired)");
  node_check->add_flag("--follow", nc.follow, "keep checking until SIGTERM; print changes");
  node_check->add_option("--every", nc.every, "seconds between checks with --follow (default 1)")
      ->check(CLI::Range(0.1, 3600.0));

  auto* demo = app.add_subcommand(
      "demo", "start a local Slurm cluster, hang a training job, watch llmwatch restart it");
  bool keep = false;
  demo->add_flag("--keep", keep, "leave the demo directory in place afterwards");

  auto* stacks = app.add_subcommand(
      "stacks",
      "print the Python stacks of a Slurm job's processes on this node (py-spy, else gdb "
      "py-bt); run by `dump` on each node of a hung job through srun --overlap");
  std::string stacks_job;
  double stacks_timeout = 20;
  stacks->add_option("--job", stacks_job, "the Slurm job id")->required();
  stacks->add_option("--timeout", stacks_timeout, "seconds per process (default 20)")
      ->check(CLI::Range(1.0, 600.0));
  bool stacks_ranks = false;
  auto* ranks_flag = stacks->add_flag(
      "--ranks", stacks_ranks,
      "print only which rank each process is (from its environment), dumping "
      "nothing; run after a rank's fatal line to see whether its process has ended");
  // Each needs the one before it: alone, it would be ignored without a word (a full dump).
  std::optional<int> stacks_rank;
  auto* rank_option = stacks
                          ->add_option("--rank", stacks_rank,
                                       "with --ranks: also whether this rank's process is "
                                       "exiting (gdb's backtrace of its main thread)")
                          ->check(CLI::Range(0, 1 << 20))
                          ->needs(ranks_flag);
  bool stacks_by_task = false;
  stacks
      ->add_flag("--by-task", stacks_by_task,
                 "with --rank: the rank is srun's task (SLURM_PROCID), not RANK (where "
                 "that is torchrun's agent, its workers are looked into too)")
      ->needs(rank_option);
  bool stacks_every_rank = false;
  stacks
      ->add_flag("--every-rank", stacks_every_rank,
                 "with --ranks: whether each rank's process here is exiting (a fatal line that "
                 "named no rank)")
      ->needs(ranks_flag)
      ->excludes(rank_option);
  bool stacks_with_stacks = false;
  stacks
      ->add_flag("--with-stacks", stacks_with_stacks,
                 "with --ranks: each rank's Python stack too, as a dump prints it (the same gdb "
                 "that looks into its exit)")
      ->needs(ranks_flag);

  // Human actions on a managed job: journaled, budgeted and dry-run aware like automatic ones.
  std::string job_name;
  std::vector<std::pair<CLI::App*, std::string>> job_verbs;
  // The verbs are the actions that say they may be asked for by hand (the catalogue).
  for (const auto& action : action_catalogue()) {
    if (!action.manual) continue;
    const std::string& verb = action.name;
    auto* sub = app.add_subcommand(verb, action.help);
    sub->add_option("job", job_name, "a [[job]] name from the config")->required();
    job_verbs.emplace_back(sub, verb);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error is exit 2, as documented.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  setup_logging(log_format, verbose);

  if (*check) return cmd_config_check(check_file.empty() ? config_path : check_file);
  if (*inspect) return cmd_inspect(kind, file, facts);
  if (*demo) return cmd_demo(keep);

  if (*stacks && stacks_ranks)
    return cmd_stack_ranks(stacks_job,
                           {stacks_rank, stacks_by_task, stacks_every_rank, stacks_with_stacks});
  if (*stacks) return cmd_stacks(stacks_job, stacks_timeout);  // on a node: no config needed
  if (*node_check) {
    // On a compute node there is often no config file: the defaults are a complete check.
    bool explicit_config =
        app.get_option("--config")->count() > 0 || std::getenv("LLMWATCH_CONFIG");
    std::optional<Config> node_cfg = explicit_config || std::filesystem::exists(config_path)
                                         ? load_or_report(config_path)
                                         : std::optional<Config>(Config{});
    if (!node_cfg) return 3;  // UNKNOWN: Nagios callers read 2 as "node broken"
    if (nc.output_dir.empty() && !print_only) nc.output_dir = node_cfg->gpu.results_dir;
    nc.save_state = !print_only;
    return cmd_node_check(*node_cfg, nc);
  }

  auto cfg = load_or_report(config_path);
  if (!cfg) return kExitUsage;
  if (app.get_option("--log-format")->count() == 0) setup_logging(cfg->log_format, verbose);
  // A thread left blocked on a hung mount must not keep the caller waiting (detached_worker.h).
  if (*run) return run_in_worker([&] { return cmd_run_once(*cfg); });
  if (*daemon) {
    Seconds span(0);
    if (!run_for.empty()) {
      auto parsed = parse_duration(run_for);
      if (!parsed) {
        std::cerr << "llmwatch: daemon --for " << run_for << ": " << parsed.error() << "\n";
        return kExitUsage;
      }
      span = *parsed;
    }
    return run_in_worker([&] { return cmd_daemon(config_path, *cfg, listen, span); });
  }
  if (*status) return cmd_status(*cfg, status_json, status_watch, status_check);
  if (*nodes) return cmd_nodes(*cfg, nodes_json, nodes_node);
  if (*job_view) return cmd_job_view(*cfg, view_job, job_json);
  if (*silence_add)
    return cmd_silence(*cfg, "add", silence_pattern, silence_for, silence_reason, 0);
  if (*silence_list) return cmd_silence(*cfg, "list", "", "", "", 0);
  if (*silence_remove) return cmd_silence(*cfg, "remove", "", "", "", silence_id);
  if (*events) return cmd_events(*cfg, since, job, events_json);
  if (*goodput) return cmd_goodput(*cfg, goodput_since, goodput_by, goodput_json, goodput_html);
  if (*submit) return cmd_submit(*cfg, interval);
  for (const auto& [sub, verb] : job_verbs)
    if (*sub) return cmd_job_action(*cfg, verb, job_name);
  return kExitUsage;
}

#include "config/config_schema.h"

#include <map>

#include "config/action_catalogue.h"
#include "config/channel_catalogue.h"

namespace llmwatch {

// KEY(Struct, "name", Kind, field): assigns the value's matching member to the field.
#define LW_SET(T, field, member) [](T& t, const ConfigValue& v) { t.field = v.member; }

const std::vector<KeySpec<Config>>& general_keys() {
  static const std::vector<KeySpec<Config>> keys = {
      {"state_dir", KeyKind::String, LW_SET(Config, state_dir, s)},
      {"interval", KeyKind::Duration, LW_SET(Config, interval, dur)},
      {"lease_ttl", KeyKind::Duration, LW_SET(Config, lease_ttl, dur)},
      {"cycle_deadline", KeyKind::Duration, LW_SET(Config, cycle_deadline, dur)},
      {"dry_run", KeyKind::Bool, LW_SET(Config, dry_run, b)},
      {"log_format", KeyKind::String, LW_SET(Config, log_format, s), false, 0, 0, {"text", "json"}},
      {"metrics_file", KeyKind::String, LW_SET(Config, metrics_file, s)},
      {"probe_timeout", KeyKind::Duration, LW_SET(Config, probe_timeout, dur)},
      {"file_timeout", KeyKind::Duration, LW_SET(Config, file_timeout, dur)},
      {"alert_repeat_every", KeyKind::Duration, LW_SET(Config, alert_repeat_every, dur)},
      {"alert_retry_backoff", KeyKind::Duration, LW_SET(Config, alert_retry_backoff, dur)},
      {"keep_history", KeyKind::Duration, LW_SET(Config, keep_history, dur)},
      {"resolve_after_cycles", KeyKind::Int,
       [](Config& t, const ConfigValue& v) { t.resolve_after_cycles = static_cast<int>(v.i); },
       false, 1, 100},
  };
  return keys;
}

const std::vector<KeySpec<SlurmSettings>>& slurm_keys() {
  static const std::vector<KeySpec<SlurmSettings>> keys = {
      {"bin_dir", KeyKind::String, LW_SET(SlurmSettings, bin_dir, s)},
      {"timeout", KeyKind::Duration, LW_SET(SlurmSettings, timeout, dur)},
      {"format",
       KeyKind::String,
       LW_SET(SlurmSettings, format, s),
       false,
       0,
       0,
       {"auto", "json", "text"}},
      {"unreachable_alert_after", KeyKind::Int,
       [](SlurmSettings& t, const ConfigValue& v) {
         t.unreachable_alert_after = static_cast<int>(v.i);
       },
       false, 1, 1000},
  };
  return keys;
}

const std::vector<KeySpec<SelfJobSettings>>& self_keys() {
  static const std::vector<KeySpec<SelfJobSettings>> keys = {
      {"job_name", KeyKind::String, LW_SET(SelfJobSettings, job_name, s)},
      {"partition", KeyKind::String, LW_SET(SelfJobSettings, partition, s)},
      {"account", KeyKind::String, LW_SET(SelfJobSettings, account, s)},
      {"qos", KeyKind::String, LW_SET(SelfJobSettings, qos, s)},
      {"time_limit", KeyKind::String, LW_SET(SelfJobSettings, time_limit, s)},
      {"interval", KeyKind::Duration, LW_SET(SelfJobSettings, interval, dur)},
      {"span", KeyKind::Duration, LW_SET(SelfJobSettings, span, dur), false, kOffAtZero},
      {"output", KeyKind::String, LW_SET(SelfJobSettings, output, s)},
      {"deadman_url", KeyKind::String, LW_SET(SelfJobSettings, deadman_url, s), true},
      {"log_max_age", KeyKind::Duration, LW_SET(SelfJobSettings, log_max_age, dur)},
  };
  return keys;
}

const std::vector<KeySpec<Limits>>& limits_keys() {
  auto int_key = [](const char* name, int Limits::*field) {
    return KeySpec<Limits>{
        name,
        KeyKind::Int,
        [field](Limits& t, const ConfigValue& v) { t.*field = static_cast<int>(v.i); },
        false,
        0,
        100000};
  };
  static const std::vector<KeySpec<Limits>> keys = {
      int_key("max_restarts_per_hour", &Limits::max_restarts_per_hour),
      int_key("max_cancels_per_hour", &Limits::max_cancels_per_hour),
      int_key("max_drains_per_hour", &Limits::max_drains_per_hour),
  };
  return keys;
}

const std::vector<KeySpec<JobSettings>>& job_keys() {
  auto num = [](const char* name, double JobSettings::*field) {
    return KeySpec<JobSettings>{name, KeyKind::Float,
                                [field](JobSettings& t, const ConfigValue& v) { t.*field = v.d; }};
  };
  // From the catalogue each action plugin registers itself in: never a list kept by hand.
  static const std::vector<std::string> kActions = action_names_for(ActionTarget::Job);
  static const std::vector<KeySpec<JobSettings>> keys = {
      {"name", KeyKind::String, LW_SET(JobSettings, name, s)},
      {"id", KeyKind::Int, [](JobSettings& t, const ConfigValue& v) { t.id = v.i; }, false, 1, 0},
      {"user", KeyKind::String, LW_SET(JobSettings, user, s)},
      {"account", KeyKind::String, LW_SET(JobSettings, account, s)},
      {"partition", KeyKind::String, LW_SET(JobSettings, partition, s)},
      {"logs", KeyKind::StringList, LW_SET(JobSettings, logs, list)},
      {"stale_after", KeyKind::Duration_or_auto,
       [](JobSettings& t, const ConfigValue& v) {
         if (v.is_auto)
           t.stale_after.reset();
         else
           t.stale_after = v.dur;
       }},
      {"stale_factor", KeyKind::Float, LW_SET(JobSettings, stale_factor, d)},
      {"stale_floor", KeyKind::Duration, LW_SET(JobSettings, stale_floor, dur)},
      {"stale_ceiling", KeyKind::Duration, LW_SET(JobSettings, stale_ceiling, dur)},
      {"stale_memory", KeyKind::Duration, LW_SET(JobSettings, stale_memory, dur), false,
       kOffAtZero},
      {"confirm_hang", KeyKind::Duration, LW_SET(JobSettings, confirm_hang, dur), false,
       kOffAtZero},
      {"startup_grace", KeyKind::Duration, LW_SET(JobSettings, startup_grace, dur)},
      {"first_steps_grace", KeyKind::Duration, LW_SET(JobSettings, first_steps_grace, dur)},
      {"checkpoint_grace", KeyKind::Duration, LW_SET(JobSettings, checkpoint_grace, dur), false,
       kOffAtZero},
      {"evaluation_grace", KeyKind::Duration, LW_SET(JobSettings, evaluation_grace, dur), false,
       kOffAtZero},
      {"kill_switch", KeyKind::String, LW_SET(JobSettings, kill_switch, s)},
      {"save_switch", KeyKind::String, LW_SET(JobSettings, save_switch, s)},
      {"kill_grace", KeyKind::Duration, LW_SET(JobSettings, kill_grace, dur), false, kOffAtZero},
      {"on_hang", KeyKind::StringList, LW_SET(JobSettings, on_hang, list), false, 0, 0, kActions},
      {"on_absent", KeyKind::StringList, LW_SET(JobSettings, on_absent, list), false, 0, 0,
       kActions},
      {"on_crash", KeyKind::StringList, LW_SET(JobSettings, on_crash, list), false, 0, 0, kActions},
      {"on_timeout", KeyKind::StringList, LW_SET(JobSettings, on_timeout, list), false, 0, 0,
       kActions},
      {"on_launch_failed", KeyKind::StringList, LW_SET(JobSettings, on_launch_failed, list), false,
       0, 0, kActions},
      {"save_before_limit", KeyKind::Duration, LW_SET(JobSettings, save_before_limit, dur), false,
       kOffAtZero},
      {"on_time_limit", KeyKind::StringList, LW_SET(JobSettings, on_time_limit, list), false, 0, 0,
       kActions},
      {"on_crash_loop", KeyKind::StringList, LW_SET(JobSettings, on_crash_loop, list), false, 0, 0,
       kActions},
      {"crash_loop_after", KeyKind::Int,
       [](JobSettings& t, const ConfigValue& v) { t.crash_loop_after = static_cast<int>(v.i); },
       false, 1, 1000},
      {"max_restarts", KeyKind::Int,
       [](JobSettings& t, const ConfigValue& v) { t.max_restarts = static_cast<int>(v.i); }, false,
       0, 1000},
      {"restart_window", KeyKind::Duration, LW_SET(JobSettings, restart_window, dur)},
      {"progress_regex", KeyKind::String, LW_SET(JobSettings, progress_regex, s)},
      num("seq_length", &JobSettings::seq_length),
      num("global_batch_size", &JobSettings::global_batch_size),
      num("gpus", &JobSettings::gpus),
      {"gpu", KeyKind::String, LW_SET(JobSettings, gpu, s)},
      {"precision",
       KeyKind::String,
       LW_SET(JobSettings, precision, s),
       false,
       0,
       0,
       {"bf16", "fp16", "fp8"}},
      num("peak_tflops", &JobSettings::peak_tflops),
      num("model_flops_per_sample", &JobSettings::model_flops_per_sample),
      num("layers", &JobSettings::layers),
      num("hidden_size", &JobSettings::hidden_size),
      num("ffn_hidden_size", &JobSettings::ffn_hidden_size),
      num("attention_heads", &JobSettings::attention_heads),
      num("query_groups", &JobSettings::query_groups),
      num("vocab_size", &JobSettings::vocab_size),
      {"gated_mlp", KeyKind::Bool, LW_SET(JobSettings, gated_mlp, b)},
      {"max_steps", KeyKind::Int, LW_SET(JobSettings, max_steps, i), false, 0, 0},
      num("train_tokens", &JobSettings::train_tokens),
      {"slowdown_percent", KeyKind::Percent, LW_SET(JobSettings, slowdown_percent, d)},
      {"slowdown_steps", KeyKind::Int,
       [](JobSettings& t, const ConfigValue& v) { t.slowdown_steps = static_cast<int>(v.i); },
       false, 1, 10000},
      num("loss_spike_factor", &JobSettings::loss_spike_factor),
      {"on_slowdown", KeyKind::StringList, LW_SET(JobSettings, on_slowdown, list), false, 0, 0,
       kActions},
      {"on_loss_spike", KeyKind::StringList, LW_SET(JobSettings, on_loss_spike, list), false, 0, 0,
       kActions},
      {"on_nan", KeyKind::StringList, LW_SET(JobSettings, on_nan, list), false, 0, 0, kActions},
      {"timing_dir", KeyKind::String, LW_SET(JobSettings, timing_dir, s)},
      {"timing_from_log", KeyKind::Bool, LW_SET(JobSettings, timing_from_log, b)},
      {"straggler_speed", KeyKind::Percent, LW_SET(JobSettings, straggler_speed, d)},
      {"on_straggler",
       KeyKind::String,
       LW_SET(JobSettings, on_straggler, s),
       false,
       0,
       0,
       {"alert", "evict"}},
      {"evict_margin", KeyKind::Percent, LW_SET(JobSettings, evict_margin, d)},
      {"evict_after", KeyKind::Duration, LW_SET(JobSettings, evict_after, dur)},
      {"on_node_fault", KeyKind::StringList, LW_SET(JobSettings, on_node_fault, list), false, 0, 0,
       kActions},
      {"on_node_degraded", KeyKind::StringList, LW_SET(JobSettings, on_node_degraded, list), false,
       0, 0, kActions},
  };
  return keys;
}

const std::vector<KeySpec<StorageSettings>>& storage_keys() {
  static const std::vector<KeySpec<StorageSettings>> keys = {
      {"path", KeyKind::String, LW_SET(StorageSettings, path, s)},
      {"usable_fraction", KeyKind::Percent, LW_SET(StorageSettings, usable_fraction, d)},
      {"warn_used", KeyKind::Percent, LW_SET(StorageSettings, warn_used, d)},
      {"critical_used", KeyKind::Percent, LW_SET(StorageSettings, critical_used, d)},
      {"min_free", KeyKind::Size, LW_SET(StorageSettings, min_free, size)},
      {"warn_inodes_used", KeyKind::Percent, LW_SET(StorageSettings, warn_inodes_used, d)},
      {"min_hours_left", KeyKind::Duration, LW_SET(StorageSettings, min_hours_left, dur), false,
       kOffAtZero},
      {"quota",
       KeyKind::String,
       LW_SET(StorageSettings, quota, s),
       false,
       0,
       0,
       {"none", "lfs", "mmlsquota", "beegfs", "quota", "custom"}},
      {"quota_command", KeyKind::StringList, LW_SET(StorageSettings, quota_command, list)},
      {"quota_regex", KeyKind::String, LW_SET(StorageSettings, quota_regex, s)},
      {"quota_timeout", KeyKind::Duration, LW_SET(StorageSettings, quota_timeout, dur)},
      {"checkpoint_dir", KeyKind::String, LW_SET(StorageSettings, checkpoint_dir, s)},
      {"checkpoint_glob", KeyKind::String, LW_SET(StorageSettings, checkpoint_glob, s)},
      {"keep_last", KeyKind::Int,
       [](StorageSettings& t, const ConfigValue& v) { t.keep_last = static_cast<int>(v.i); }, false,
       0, 100000},
      {"cleanup_dry_run", KeyKind::Bool, LW_SET(StorageSettings, cleanup_dry_run, b)},
  };
  return keys;
}

// What a node's plan may hold: the node actions of the catalogue, and alert.
static std::vector<std::string> node_plan_choices() {
  auto names = action_names_for(ActionTarget::Node);
  names.push_back("alert");
  return names;
}

const std::vector<KeySpec<GpuSettings>>& gpu_keys() {
  auto num = [](const char* name, double GpuSettings::*field) {
    return KeySpec<GpuSettings>{name,
                                KeyKind::Float,
                                [field](GpuSettings& t, const ConfigValue& v) { t.*field = v.d; },
                                false,
                                0,
                                100000};
  };
  auto int_key = [](const char* name, int GpuSettings::*field, int max) {
    return KeySpec<GpuSettings>{
        name,
        KeyKind::Int,
        [field](GpuSettings& t, const ConfigValue& v) { t.*field = static_cast<int>(v.i); },
        false,
        0,
        max};
  };
  static const std::vector<KeySpec<GpuSettings>> keys = {
      {"enabled", KeyKind::Bool, LW_SET(GpuSettings, enabled, b)},
      int_key("expected_gpus", &GpuSettings::expected_gpus, 1024),
      {"xid_table", KeyKind::String, LW_SET(GpuSettings, xid_table, s)},
      {"kernel_log",
       KeyKind::String,
       LW_SET(GpuSettings, kernel_log, s),
       false,
       0,
       0,
       {"kmsg", "journalctl", "dmesg", "file", "none"}},
      {"kernel_log_path", KeyKind::String, LW_SET(GpuSettings, kernel_log_path, s)},
      {"nvidia_smi", KeyKind::String, LW_SET(GpuSettings, nvidia_smi, s)},
      {"nvidia_smi_timeout", KeyKind::Duration, LW_SET(GpuSettings, nvidia_smi_timeout, dur)},
      {"nvlink", KeyKind::Bool, LW_SET(GpuSettings, nvlink, b)},
      {"dcgmi_diag_level",
       KeyKind::String,
       LW_SET(GpuSettings, dcgmi_diag_level, s),
       false,
       0,
       0,
       {"", "1", "2", "3"}},
      {"dcgmi_fleet_below", KeyKind::Percent, LW_SET(GpuSettings, dcgmi_fleet_below, d)},
      {"dcgmi_health", KeyKind::Bool, LW_SET(GpuSettings, dcgmi_health, b)},
      {"dcgmi_dmon", KeyKind::Bool, LW_SET(GpuSettings, dcgmi_dmon, b)},
      {"check_new_allocations", KeyKind::Bool, LW_SET(GpuSettings, check_new_allocations, b)},
      {"dcgmi", KeyKind::String, LW_SET(GpuSettings, dcgmi, s)},
      {"dcgmi_timeout", KeyKind::Duration, LW_SET(GpuSettings, dcgmi_timeout, dur)},
      {"node_state_dir", KeyKind::String, LW_SET(GpuSettings, node_state_dir, s)},
      num("ecc_uncorrected_critical", &GpuSettings::ecc_uncorrected_critical),
      num("retired_pages_critical", &GpuSettings::retired_pages_critical),
      {"pcie_width_check", KeyKind::Bool, LW_SET(GpuSettings, pcie_width_check, b)},
      num("temperature_warn", &GpuSettings::temperature_warn),
      {"collect",
       KeyKind::String,
       LW_SET(GpuSettings, collect, s),
       false,
       0,
       0,
       {"results", "srun", "both"}},
      {"results_dir", KeyKind::String, LW_SET(GpuSettings, results_dir, s)},
      {"result_max_age", KeyKind::Duration, LW_SET(GpuSettings, result_max_age, dur)},
      {"manage_nodes", KeyKind::String, LW_SET(GpuSettings, manage_nodes, s)},
      {"idle_check_every", KeyKind::Duration, LW_SET(GpuSettings, idle_check_every, dur), false,
       kOffAtZero},
      {"max_drained_fraction", KeyKind::Percent, LW_SET(GpuSettings, max_drained_fraction, d)},
      {"on_critical", KeyKind::StringList, LW_SET(GpuSettings, on_critical, list), false, 0, 0,
       node_plan_choices()},
      {"on_reset", KeyKind::StringList, LW_SET(GpuSettings, on_reset, list), false, 0, 0,
       node_plan_choices()},
      {"undrain", KeyKind::Bool, LW_SET(GpuSettings, undrain, b)},
      {"undrain_kill_task_failed", KeyKind::Bool, LW_SET(GpuSettings, undrain_kill_task_failed, b)},
      int_key("lemon_failures", &GpuSettings::lemon_failures, 1000),
      {"lemon_window", KeyKind::Duration, LW_SET(GpuSettings, lemon_window, dur)},
  };
  return keys;
}

const std::vector<KeySpec<AlertChannel>>& alert_keys() {
  static const std::vector<KeySpec<AlertChannel>> keys = {
      {"name", KeyKind::String, LW_SET(AlertChannel, name, s)},
      {"match", KeyKind::StringList, LW_SET(AlertChannel, match, list)},
      {"min_severity",
       KeyKind::String,
       LW_SET(AlertChannel, min_severity, s),
       false,
       0,
       0,
       {"info", "warning", "critical"}},
      {"timeout", KeyKind::Duration, LW_SET(AlertChannel, timeout, dur)},
  };
  return keys;
}

std::vector<KeySpec<AlertChannel>> channel_keys(const std::string& type) {
  auto info = find_channel_info(type);
  if (!info) return {};
  auto keys = alert_keys();
  for (const auto& o : info->options)
    keys.emplace_back(
        o.name, o.kind,
        [name = o.name](AlertChannel& a, const ConfigValue& v) { a.options[name] = v; }, o.secret);
  return keys;
}

const std::vector<KeySpec<CommandCheckSettings>>& command_check_keys() {
  static const std::vector<KeySpec<CommandCheckSettings>> keys = {
      {"name", KeyKind::String, LW_SET(CommandCheckSettings, name, s)},
      {"command", KeyKind::StringList, LW_SET(CommandCheckSettings, command, list)},
      {"every", KeyKind::Duration, LW_SET(CommandCheckSettings, every, dur)},
      {"timeout", KeyKind::Duration, LW_SET(CommandCheckSettings, timeout, dur)},
      {"where",
       KeyKind::String,
       LW_SET(CommandCheckSettings, where, s),
       false,
       0,
       0,
       {"here", "nodes"}},
      {"hint",
       KeyKind::String,
       LW_SET(CommandCheckSettings, hint, s),
       false,
       0,
       0,
       {"drain", "reset", "none"}},
      {"fleet_compare", KeyKind::StringList, LW_SET(CommandCheckSettings, fleet_compare, list)},
      {"fleet_below", KeyKind::Percent, LW_SET(CommandCheckSettings, fleet_below, d)},
  };
  return keys;
}

#undef LW_SET

std::vector<std::string> all_config_keys() {
  std::vector<std::string> out;
  auto add = [&out](const std::string& table, const auto& keys) {
    for (const auto& k : keys) out.push_back(table + "." + k.name);
  };
  add("llmwatch", general_keys());
  add("slurm", slurm_keys());
  add("self", self_keys());
  add("limits", limits_keys());
  add("job", job_keys());
  add("storage", storage_keys());
  add("check", command_check_keys());
  add("gpu", gpu_keys());
  add("alert", alert_keys());
  for (const auto& c : channel_catalogue()) add("alert." + c.type, c.options);
  return out;
}

}  // namespace llmwatch

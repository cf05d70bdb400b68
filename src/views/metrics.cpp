#include "views/metrics.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rules/job_progress.h"
#include "rules/job_rules.h"
#include "store/alert_journal.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/files.h"
#include "views/goodput_view.h"
#include "views/job_view.h"

namespace llmwatch {
namespace {

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// One metric family: HELP, TYPE, then its samples.
struct Family {
  std::ostringstream& out;
  Family(std::ostringstream& o, const std::string& name, const std::string& type,
         const std::string& help)
      : out(o) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
};

void sample(std::ostringstream& out, const std::string& name,
            const std::map<std::string, std::string>& labels, double value) {
  out << name;
  if (!labels.empty()) {
    out << "{";
    bool first = true;
    for (const auto& [k, v] : labels) {
      out << (first ? "" : ",") << k << "=\"" << label_value(v) << "\"";
      first = false;
    }
    out << "}";
  }
  out << " " << value << "\n";
}

}  // namespace

std::string render_metrics(const Config& config, Store& store, double now) {
  std::ostringstream m;
  m.precision(15);
  auto hb = nlohmann::json::parse(store.get(kv::kHeartbeat).value_or("{}"), nullptr, false);
  if (hb.is_object() && hb.contains("ts")) {
    Family(m, "llmwatch_last_cycle_timestamp_seconds", "gauge",
           "Unix time the last supervision cycle started.");
    sample(m, "llmwatch_last_cycle_timestamp_seconds", {}, hb["ts"].get<double>());
    Family(m, "llmwatch_cycle_duration_seconds", "gauge", "How long the last cycle took.");
    sample(m, "llmwatch_cycle_duration_seconds", {}, hb.value("duration", 0.0));
    Family(m, "llmwatch_probe_up", "gauge",
           "1 if the probe could observe in the last cycle, 0 if unknown.");
    for (const auto& p : hb.value("probes", nlohmann::json::array()))
      sample(m, "llmwatch_probe_up", {{"probe", p.value("name", "")}},
             p.value("ok", false) ? 1 : 0);
    Family(m, "llmwatch_probe_duration_seconds", "gauge",
           "How long each probe took in the last cycle.");
    for (const auto& p : hb.value("probes", nlohmann::json::array()))
      sample(m, "llmwatch_probe_duration_seconds", {{"probe", p.value("name", "")}},
             p.value("seconds", 0.0));
  }

  std::map<std::string, int> firing;
  for (const auto& row : store.firing()) ++firing[row.severity];
  Family(m, "llmwatch_alerts_firing", "gauge", "Findings currently firing, by severity.");
  for (const char* sev : {"info", "warning", "critical", "unknown"})
    sample(m, "llmwatch_alerts_firing", {{"severity", sev}}, firing[sev]);

  Family(m, "llmwatch_actions_total", "counter", "Actions journaled, by kind and outcome.");
  for (const auto& a : store.action_counts())
    sample(m, "llmwatch_actions_total", {{"kind", a.kind}, {"outcome", a.state}},
           static_cast<double>(a.count));

  Family(m, "llmwatch_deliveries_failed_total", "counter",
         "Failed alert delivery attempts, by channel.");
  for (const auto& [channel, failed] : AlertJournal(store).failed_attempts())
    sample(m, "llmwatch_deliveries_failed_total", {{"channel", channel}},
           static_cast<double>(failed));
  Family(m, "llmwatch_deliveries_pending", "gauge",
         "Alert deliveries waiting to be sent or retried.");
  sample(m, "llmwatch_deliveries_pending", {}, AlertJournal(store).pending_count());

  // Per watched job.
  std::ostringstream running, step, step_time, tps, mfu_m, loss, restarts, since, ratio, lost, ends,
      speed, judged, ettr, gpu_seconds, node_lost;
  // The goodput ledger (#29), 30 days: a per-job ETTR, and the GPU-seconds per bucket and cause.
  auto ledger = GoodputLedger(store).rows(now - 30 * 86400.0);
  {  // a counter: every row since the ledger began, so it never goes down
    std::map<std::pair<std::string, std::string>, double> sums;
    for (const auto& r : GoodputLedger(store).rows(0)) sums[{r.bucket, r.cause}] += r.gpu_seconds;
    for (const auto& [k, v] : sums)
      sample(gpu_seconds, "llmwatch_gpu_seconds_total", {{"bucket", k.first}, {"cause", k.second}},
             v);
  }
  // The nodes that cost the most in 30 days (the ledger's attributed losses): a top list, never
  // a label per node of the fleet.
  int listed = 0;
  for (const auto& loser : goodput_losers(ledger, "node"))
    if (loser.key != "(no node named)" && listed++ < 20)
      sample(node_lost, "llmwatch_node_lost_gpu_seconds", {{"node", loser.key}}, loser.lost);
  for (const auto& job : config.jobs) {
    std::string label = job_label(job);
    std::map<std::string, std::string> l = {{"job", label}};
    JobProgress p = store.progress(label);
    auto view =
        nlohmann::json::parse(store.get(kv::job_view(label)).value_or("{}"), nullptr, false);
    bool is_running = false;
    if (view.is_object()) {
      for (const auto& e : view.value("entries", nlohmann::json::array()))
        is_running |= e.value("state", "") == "RUNNING";
      for (const auto& n : view.value("node_speeds", nlohmann::json::array()))
        if (n.is_object() && n.value("relative", -1.0) >= 0)
          sample(speed, "llmwatch_node_relative_speed",
                 {{"job", label}, {"node", n.value("node", "")}}, n.value("relative", 1.0));
      if (auto j = view.find("nodes_judged"); j != view.end() && j->is_number_unsigned())
        sample(judged, "llmwatch_job_nodes_judged", l, j->get<double>());
    }
    sample(running, "llmwatch_job_running", l, is_running ? 1 : 0);
    if (p.step) sample(step, "llmwatch_job_step", l, static_cast<double>(*p.step));
    auto f = job_figures(job, p, now);
    if (f.contains("step_time_s"))
      sample(step_time, "llmwatch_job_step_time_seconds", l, f["step_time_s"].get<double>());
    if (f.contains("tokens_per_s"))
      sample(tps, "llmwatch_job_tokens_per_second", l, f["tokens_per_s"].get<double>());
    if (f.contains("mfu")) sample(mfu_m, "llmwatch_job_mfu_ratio", l, f["mfu"].get<double>());
    if (f.contains("loss")) sample(loss, "llmwatch_job_loss", l, f["loss"].get<double>());
    sample(restarts, "llmwatch_job_restarts_total", l, store.count_actions("restart", label, 0));
    if (p.last_progress > 0)
      sample(since, "llmwatch_job_seconds_since_progress", l, now - p.last_progress);
    if (auto t = goodput_totals(ledger, label); t.allocated > 0)
      sample(ettr, "llmwatch_job_ettr_ratio", l, t.ettr());
    auto h = job_history(job, store, now, false);  // every cycle: no step series
    if (h.contains("effective_training_ratio"))
      sample(ratio, "llmwatch_job_effective_training_ratio", l,
             h["effective_training_ratio"].get<double>());
    if (h.contains("lost_s"))
      sample(lost, "llmwatch_job_lost_seconds", l, h["lost_s"].get<double>());
  }
  for (const auto& [key, count] : store.end_counts())
    sample(ends, "llmwatch_job_ends", {{"job", key.first}, {"class", key.second}}, count);
  auto family = [&m](const char* name, const char* type, const char* help,
                     const std::ostringstream& samples) {
    Family(m, name, type, help);
    m << samples.str();
  };
  family("llmwatch_job_running", "gauge", "1 if a task of the watched job is RUNNING.", running);
  family("llmwatch_job_step", "gauge", "The last training step seen in the job's log.", step);
  family("llmwatch_job_step_time_seconds", "gauge", "Median recent step time.", step_time);
  family("llmwatch_job_tokens_per_second", "gauge", "Training throughput.", tps);
  family("llmwatch_job_mfu_ratio", "gauge", "Model FLOPs utilisation, 0..1.", mfu_m);
  family("llmwatch_job_loss", "gauge", "The last training loss.", loss);
  family("llmwatch_job_restarts_total", "counter", "Restarts llmwatch performed.", restarts);
  family("llmwatch_job_seconds_since_progress", "gauge",
         "Seconds since the step counter last advanced.", since);
  family("llmwatch_job_effective_training_ratio", "gauge",
         "Wall time since the first step not lost to failures (silence, restart, steps redone); "
         "llmwatch_job_ettr_ratio also counts startup and queue time.",
         ratio);
  family("llmwatch_job_ettr_ratio", "gauge",
         "Productive GPU-seconds over allocated ones in the last 30 days (goodput ledger).", ettr);
  family("llmwatch_gpu_seconds_total", "counter",
         "Watched runs' GPU-seconds by goodput bucket and cause, since the ledger began.",
         gpu_seconds);
  family("llmwatch_node_lost_gpu_seconds", "gauge",
         "GPU-seconds lost in the last 30 days to failures the post-mortems attributed to the "
         "node (goodput ledger), for the nodes that lost the most.",
         node_lost);
  family(
      "llmwatch_node_relative_speed", "gauge",
      "A node's pace against the other nodes of its job (1: as its peers; 0.7: its ranks "
      "compute 1.43x longer), from per-rank timing: the job's 8 slowest under 0.95x, or suspects.",
      speed);
  family("llmwatch_job_nodes_judged", "gauge",
         "Nodes of the job judged for speed at its last timing read; llmwatch_node_relative_speed "
         "carries only those slower than 0.95x their peers (or suspects), at most 8.",
         judged);
  family("llmwatch_job_lost_seconds", "gauge",
         "Wall time lost to interruptions (from the last step before each to the first after).",
         lost);
  family("llmwatch_job_ends", "gauge",
         "Tasks of the job that ended, by the post-mortem's class, within keep_history.", ends);

  // Storage entries, from the last cycle.
  std::ostringstream used, usable, inodes, inode_total, to_full;
  for (const auto& st : config.storage) {
    auto snap =
        nlohmann::json::parse(store.get(kv::storage(st.path)).value_or("{}"), nullptr, false);
    if (!snap.is_object() || !snap.contains("used_bytes")) continue;
    std::map<std::string, std::string> l = {{"path", st.path}};
    sample(used, "llmwatch_storage_used_bytes", l, snap["used_bytes"].get<double>());
    sample(usable, "llmwatch_storage_usable_bytes", l, snap["usable_bytes"].get<double>());
    sample(inodes, "llmwatch_storage_used_inodes", l, snap["used_inodes"].get<double>());
    sample(inode_total, "llmwatch_storage_inodes", l, snap["total_inodes"].get<double>());
    if (snap.contains("seconds_to_full"))
      sample(to_full, "llmwatch_storage_seconds_to_full", l, snap["seconds_to_full"].get<double>());
  }
  family("llmwatch_storage_used_bytes", "gauge", "Bytes used on the filesystem.", used);
  family("llmwatch_storage_usable_bytes", "gauge", "Usable capacity (total x usable_fraction).",
         usable);
  family("llmwatch_storage_used_inodes", "gauge", "Inodes used.", inodes);
  family("llmwatch_storage_inodes", "gauge", "Inodes in total.", inode_total);
  family("llmwatch_storage_seconds_to_full", "gauge",
         "Forecast seconds until the usable capacity is full.", to_full);

  // Nodes needing attention, from the last sinfo.
  auto nodes = nlohmann::json::parse(store.get(kv::kNodes).value_or("{}"), nullptr, false);
  Family(m, "llmwatch_node_unusable", "gauge",
         "1 for a node that is drained or down, with its reason.");
  if (nodes.is_object())
    for (const auto& n : nodes.value("attention", nlohmann::json::array()))
      sample(m, "llmwatch_node_unusable",
             {{"node", n.value("name", "")}, {"state", n.value("state", "")}}, 1);

  // GPU health ([gpu]): each node's last node-check verdict, and what llmwatch drained.
  Family(m, "llmwatch_node_gpu_health", "gauge",
         "Last node-check verdict as a Nagios code: 0 OK, 1 WARN, 2 CRITICAL, 3 UNKNOWN.");
  for (const auto& [node, health] : store.node_health())
    sample(m, "llmwatch_node_gpu_health", {{"node", node}}, nagios_code(health.verdict));
  // The lemon ledger: job crashes a node was blamed for and its GPU warnings, in the window.
  Family(m, "llmwatch_node_incidents", "gauge",
         "Incidents charged to the node within [gpu] lemon_window (crash suspect, GPU warning).");
  for (const auto& [node, count] :
       store.incident_counts(now - static_cast<double>(config.gpu.lemon_window.count())))
    sample(m, "llmwatch_node_incidents", {{"node", node}}, count);
  int drained_by_llmwatch = static_cast<int>(store.drained_nodes().size());
  Family(m, "llmwatch_nodes_drained_by_llmwatch", "gauge",
         "Nodes llmwatch drained and has not yet returned to service.");
  sample(m, "llmwatch_nodes_drained_by_llmwatch", {}, drained_by_llmwatch);
  return m.str();
}

Status write_metrics_file(const std::string& path, const Config& config, Store& store, double now) {
  return write_file_atomic(path, render_metrics(config, store, now));
}

}  // namespace llmwatch

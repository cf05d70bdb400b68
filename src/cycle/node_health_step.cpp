#include "cycle/node_health_step.h"

#include <algorithm>
#include <set>

#include "policy/drain_policy.h"
#include "slurm/hostlist.h"
#include "store/store.h"
#include "util/files.h"
#include "util/paths.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

std::vector<std::string> hosts_of(const std::string& list) {
  auto hosts = expand_hostlist(list);
  return hosts ? *hosts : std::vector<std::string>{};
}

// `srun --overlap` one node-check per node of a watched job's allocation.
std::vector<NodeReport> collect_by_srun(const Config& config, SlurmClient& slurm,
                                        const std::vector<WatchedTask>& running,
                                        std::vector<std::string>& errors) {
  std::vector<NodeReport> out;
  std::set<std::int64_t> asked;
  const std::string self = self_exe();
  for (const auto& w : running) {
    if (!asked.insert(w.task.job_id).second) continue;
    std::vector<std::string> args = {"--overlap", "--jobid=" + std::to_string(w.task.job_id),
                                     "--ntasks-per-node=1"};
    if (w.task.node_count > 0) args.push_back("--nodes=" + std::to_string(w.task.node_count));
    args.push_back(self);
    if (!config.path.empty() && config.path != "<embedded>")
      args.insert(args.end(), {"--config", config.path});  // a global option: before the verb
    args.insert(args.end(), {"node-check", "--json"});
    auto r = slurm.run_step(args,
                            config.gpu.nvidia_smi_timeout + config.gpu.dcgmi_timeout + Seconds(30));
    // node-check exits 1-3 for WARN/CRITICAL/UNKNOWN: the documents matter, not the status.
    size_t before = out.size();
    for (const auto& line : split(r.out, '\n'))
      if (auto report = NodeReport::from_json(std::string(trim(line)), nullptr))
        out.push_back(std::move(*report));
    if (out.size() == before)
      errors.push_back("srun node-check in job " + std::to_string(w.task.job_id) + ": " +
                       r.describe("srun") + " " + sanitize_line(r.err, 200));
  }
  return out;
}

// on_critical for a node, without "drain" when that would take too much of its partition out
// (the finding then says so), and always announced.
std::vector<std::string> critical_plan(const GpuSettings& g, const std::string& node,
                                       const std::vector<SlurmNode>& nodes,
                                       std::set<std::string>& draining_now, Finding& f) {
  std::vector<std::string> plan = g.on_critical;
  if (std::find(plan.begin(), plan.end(), "drain") != plan.end()) {
    std::string blocked = drain_blocked(node, nodes, g.max_drained_fraction, draining_now);
    if (!blocked.empty()) {
      plan.erase(std::remove(plan.begin(), plan.end(), "drain"), plan.end());
      f.evidence.push_back("not drained: " + blocked);
    } else {
      draining_now.insert(node);
    }
  }
  if (std::find(plan.begin(), plan.end(), "alert") == plan.end()) plan.push_back("alert");
  return plan;
}

std::string evidence_of(const NodeReport& r, std::vector<std::string>& lines) {
  for (const auto& i : r.items) {
    if (i.verdict == Verdict::Ok) continue;
    lines.push_back(std::string(verdict_name(i.verdict)) + ": " + i.summary);
    for (const auto& e : i.evidence)
      if (lines.size() < 12) lines.push_back("  " + e);
  }
  return r.headline();
}

}  // namespace

std::optional<NodeReport> read_node_result(const std::string& dir, const std::string& node,
                                           std::string* error) {
  auto text = read_text_file(dir + "/" + node + ".json");
  if (!text) {
    if (error) *error = "no result in " + dir;
    return std::nullopt;
  }
  return NodeReport::from_json(*text, error);
}

NodeStep node_health_step(const Config& config, SlurmClient& slurm, Store& store,
                          const SinfoParse& nodes, const std::vector<WatchedTask>& running,
                          double now) {
  NodeStep step;
  const GpuSettings& g = config.gpu;
  if (!g.enabled) return step;
  std::set<std::string> draining_now;  // planned this cycle: they count against the fraction

  // The nodes llmwatch may act on: the configured list, else the nodes of watched jobs
  // (and nodes it drained itself, so it can return them to service).
  std::set<std::string> managed;
  if (!g.manage_nodes.empty()) {
    for (const auto& h : hosts_of(g.manage_nodes)) managed.insert(h);
  } else {
    for (const auto& w : running)
      for (const auto& h : hosts_of(w.task.nodes)) managed.insert(h);
    for (const auto& n : nodes.nodes)
      if (store.get("drained:" + n.name).value_or("") != "") managed.insert(n.name);
  }

  std::map<std::string, NodeReport> reports;
  if (g.collect != "srun" && !g.results_dir.empty())
    for (const auto& node : managed)
      if (auto r = read_node_result(g.results_dir, node, nullptr)) reports[node] = std::move(*r);
  if (g.collect != "results") {
    std::vector<std::string> errors;
    for (auto& r : collect_by_srun(config, slurm, running, errors))
      if (managed.count(r.node)) reports[r.node] = std::move(r);
    for (const auto& e : errors) {
      ++step.unknown;
      store.add_event(now, "node-check", "llmwatch", "warning", e);
    }
  }

  std::map<std::string, const SlurmNode*> by_name;
  for (const auto& n : nodes.nodes) by_name[n.name] = &n;
  const double max_age = static_cast<double>(g.result_max_age.count());
  std::map<std::string, Verdict> fresh;  // node → verdict of a fresh report

  for (const auto& [node, r] : reports) {
    step.scopes.push_back("node:" + node + "/");
    std::string key = "node:" + node + "/gpu";
    if (now - r.ts > max_age) {
      ++step.unknown;
      Finding f =
          make_finding("node:" + node, node, "gpu-unknown", Severity::Unknown,
                       "no fresh node-check for " + node + " (last one " +
                           format_duration(Seconds(static_cast<long long>(now - r.ts))) + " ago)");
      f.key = key;
      step.findings.push_back(f);
      continue;
    }
    fresh[node] = r.verdict;
    // Health history: one event per change of verdict or headline.
    std::string summary = std::string(verdict_name(r.verdict)) + " " + r.headline();
    if (store.get("nodehealth:" + node).value_or("") != summary) {
      store.put("nodehealth:" + node, summary, now);
      std::string sev = r.verdict == Verdict::Critical ? "critical"
                        : r.verdict == Verdict::Ok     ? "info"
                                                       : "warning";
      store.add_event(now, "node-health", node, sev, summary, r.to_json());
      if (r.verdict == Verdict::Critical || r.verdict == Verdict::Warn)
        store.add_event(now, "incident", node, sev, "GPU health: " + r.headline());
    }
    const SlurmNode* sn = by_name.count(node) ? by_name[node] : nullptr;
    if (r.verdict == Verdict::Critical) {
      Finding f = make_finding("node:" + node, node, "gpu-fault", Severity::Critical, "");
      f.key = key;
      f.summary = evidence_of(r, f.evidence);
      step.bad_nodes.push_back(node);
      step.plans[key] = critical_plan(g, node, nodes.nodes, draining_now, f);
      step.findings.push_back(f);
    } else if (r.verdict == Verdict::Warn) {
      Finding f = make_finding("node:" + node, node, "gpu-warn", Severity::Warning, "");
      f.key = key;
      f.summary = evidence_of(r, f.evidence);
      step.plans[key] = {"alert"};
      step.findings.push_back(f);
    } else if (r.verdict == Verdict::Unknown) {
      ++step.unknown;
      Finding f = make_finding("node:" + node, node, "gpu-unknown", Severity::Unknown, "");
      f.key = key;
      f.summary = evidence_of(r, f.evidence);
      step.findings.push_back(f);
    } else if (g.undrain && sn && undrain_allowed(*sn, g.undrain_kill_task_failed)) {
      // A passing check taken after llmwatch drained it; "Kill task failed" also needs proof
      // that no process is left on the GPUs (an unreachable node is not clean).
      double drained_at = 0;
      try {
        drained_at = std::stod(store.get("drained:" + node).value_or("0"));
      } catch (const std::exception&) {
      }
      bool ours = starts_with(sn->reason, kOwnReasonPrefix);
      bool clean = ours ? r.ts > drained_at : r.gpu_processes == 0;
      if (clean) {
        Finding f = make_finding("node:" + node, node, "repaired", Severity::Info,
                                 node + " passes its checks again: returning it to service");
        f.evidence.push_back("drained for: " + sn->reason);
        f.evidence.push_back("node-check " + std::string(verdict_name(r.verdict)) + " at " +
                             std::to_string(static_cast<long long>(r.ts)));
        if (!ours) f.evidence.push_back("no GPU processes left");
        step.plans[f.key] = {"undrain", "alert"};
        step.findings.push_back(f);
      }
    }
  }

  // Lemon nodes: many incidents (job crashes on it, GPU warnings) in the window.
  if (g.lemon_failures > 0) {
    for (const auto& [node, incidents] :
         store.incident_counts(now - static_cast<double>(g.lemon_window.count()))) {
      if (!managed.count(node)) continue;
      if (fresh.count(node) && fresh[node] == Verdict::Critical) continue;
      if (incidents < g.lemon_failures) continue;
      step.scopes.push_back("node:" + node + "/lemon");
      Finding f = make_finding("node:" + node, node, "lemon", Severity::Critical,
                               "suspect node: " + std::to_string(incidents) +
                                   " incidents (job failures, GPU warnings) in " +
                                   format_duration(g.lemon_window));
      step.plans[f.key] = critical_plan(g, node, nodes.nodes, draining_now, f);
      step.findings.push_back(f);
    }
  }

  // Watched jobs running on a faulty node: restart elsewhere (or checkpoint, when the GPU
  // only needs a reset when idle).
  for (const auto& w : running) {
    for (const auto& node : hosts_of(w.task.nodes)) {
      auto it = reports.find(node);
      if (it == reports.end() || !fresh.count(node)) continue;
      const NodeReport& r = it->second;
      if (r.verdict == Verdict::Critical) {
        Finding f = make_finding("job:" + w.label, w.label, "node-fault", Severity::Critical,
                                 "task " + w.task.display_id() + " runs on " + node +
                                     ", which is CRITICAL: " + r.headline());
        f.evidence.push_back("nodes of the task: " + w.task.nodes);
        step.findings.push_back(f);
        break;
      }
      bool wants_save = std::any_of(r.items.begin(), r.items.end(),
                                    [](const HealthItem& i) { return i.hint == "save"; });
      if (r.verdict == Verdict::Warn && wants_save) {
        Finding f = make_finding("job:" + w.label, w.label, "node-degraded", Severity::Warning,
                                 "task " + w.task.display_id() + " runs on " + node +
                                     ", which needs a GPU reset when idle: " + r.headline());
        step.findings.push_back(f);
        break;
      }
    }
  }
  return step;
}

}  // namespace llmwatch

#include "rules/node_findings.h"

#include <algorithm>

#include "slurm/hostlist.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// The headline as the summary, and each non-OK item with a bounded share of its evidence.
std::string evidence_of(const NodeReport& r, std::vector<std::string>& lines) {
  for (const auto& i : r.items) {
    if (i.verdict == Verdict::Ok) continue;
    lines.push_back(std::string(verdict_name(i.verdict)) + ": " + i.summary);
    for (const auto& e : i.evidence)
      if (lines.size() < 12) lines.push_back("  " + e);
  }
  return r.headline();
}

// A GPU a reset would heal: every item that is not OK asks for a reset (now, or when idle).
bool reset_heals(const NodeReport& r) {
  bool any = false;
  for (const auto& i : r.items) {
    if (i.verdict == Verdict::Ok) continue;
    if (i.hint != "reset" && i.hint != "save") return false;
    any = true;
  }
  return any;
}

Finding node_finding(const std::string& node, const std::string& kind, Severity severity,
                     const NodeReport& r) {
  Finding f = make_finding("node:" + node, node, kind, severity, "");
  f.key = "node:" + node + "/gpu";  // one key whatever the verdict: a change replaces it
  f.summary = evidence_of(r, f.evidence);
  if (reset_heals(r)) f.cause = kResetHeals;
  return f;
}

// A node the lemon rule holds: llmwatch manages it and its incidents in the window reach
// lemon_failures.
bool is_lemon(const GpuSettings& g, const NodeFacts& facts, const std::string& node) {
  auto it = facts.incidents.find(node);
  return g.lemon_failures > 0 && it != facts.incidents.end() && it->second >= g.lemon_failures &&
         facts.managed.count(node);
}

// A node llmwatch may return to service, passing a check taken after llmwatch drained it;
// "Kill task failed" also needs proof that no process is left on the GPUs. Not a lemon: its
// faults come and go, so it passes checks between them (it was returned at its first passing
// check, for good: its lemon finding still fired, so nothing drained it again); it comes back
// once its incidents no longer make it one (withdrawn, or older than lemon_window).
std::optional<Finding> repaired(const GpuSettings& g, const NodeFacts& facts,
                                const std::string& node, const NodeReport& r) {
  if (!g.undrain || is_lemon(g, facts, node)) return std::nullopt;
  auto sn = std::find_if(facts.nodes.begin(), facts.nodes.end(),
                         [&](const SlurmNode& n) { return n.name == node; });
  if (sn == facts.nodes.end() || !undrain_allowed(*sn, g.undrain_kill_task_failed))
    return std::nullopt;
  bool ours = reason_by(sn->reason) == ReasonBy::Llmwatch;
  auto drained = facts.drained_at.find(node);
  double drained_at = drained == facts.drained_at.end() ? 0 : drained->second;
  if (ours ? r.ts <= drained_at : r.gpu_processes != 0) return std::nullopt;
  Finding f = make_finding("node:" + node, node, "repaired", Severity::Info,
                           node + " passes its checks again: returning it to service");
  f.evidence.push_back("drained for: " + sn->reason);
  f.evidence.push_back("node-check " + std::string(verdict_name(r.verdict)) + " at " +
                       std::to_string(static_cast<long long>(r.ts)));
  if (!ours) f.evidence.push_back("no GPU processes left");
  return f;
}

// A watched task on a CRITICAL node must move; on one that needs a GPU reset when idle, it
// should checkpoint. One finding per task, for its first such node.
std::optional<Finding> task_on_bad_node(const WatchedTask& w, const NodeFacts& facts,
                                        const std::map<std::string, Verdict>& fresh) {
  for (const auto& node : hosts_in(w.task.nodes)) {
    if (!fresh.count(node)) continue;
    const NodeReport& r = facts.reports.at(node);
    if (r.verdict == Verdict::Critical) {
      Finding f = make_finding("job:" + w.label, w.label, "node-fault", Severity::Critical,
                               "task " + w.task.display_id() + " runs on " + node +
                                   ", which is CRITICAL: " + r.headline());
      f.evidence.push_back("nodes of the task: " + w.task.nodes);
      return f;
    }
    bool wants_save = std::any_of(r.items.begin(), r.items.end(),
                                  [](const HealthItem& i) { return i.hint == "save"; });
    if (r.verdict == Verdict::Warn && wants_save)
      return make_finding("job:" + w.label, w.label, "node-degraded", Severity::Warning,
                          "task " + w.task.display_id() + " runs on " + node +
                              ", which needs a GPU reset when idle: " + r.headline());
  }
  return std::nullopt;
}

}  // namespace

NodeJudgement judge_nodes(const GpuSettings& g, const NodeFacts& facts) {
  NodeJudgement out;
  const double max_age = static_cast<double>(g.result_max_age.count());
  std::map<std::string, Verdict> fresh;  // node → verdict of a fresh report
  // Rebooted at llmwatch's request: until a check newer than the boot speaks, the node has
  // no verdict (its old one was about the GPU before the reset). Unknown never acts, and the
  // old finding resolves, so what a new check finds is a new episode.
  for (const auto& [node, boot] : facts.booted) {
    auto it = facts.reports.find(node);
    if (it != facts.reports.end() && it->second.ts >= boot) continue;
    if (it == facts.reports.end()) out.scopes.push_back("node:" + node + "/");
    ++out.unknown;
    Finding f = make_finding(
        "node:" + node, node, "rebooted", Severity::Unknown,
        node + " was rebooted (" + format_utc(boot) + "): waiting for a node-check after the boot");
    f.key = "node:" + node + "/reboot";
    out.findings.push_back(f);
  }
  for (const auto& [node, r] : facts.reports) {
    out.scopes.push_back("node:" + node + "/");
    auto booted = facts.booted.find(node);
    if (booted != facts.booted.end() && r.ts < booted->second) continue;  // waiting (above)
    if (facts.now - r.ts > max_age) {
      ++out.unknown;
      Finding f = make_finding(
          "node:" + node, node, "gpu-unknown", Severity::Unknown,
          "no fresh node-check for " + node + " (last one " +
              format_duration(Seconds(static_cast<long long>(facts.now - r.ts))) + " ago)");
      f.key = "node:" + node + "/gpu";
      out.findings.push_back(f);
      continue;
    }
    fresh[node] = r.verdict;
    // A reset-class fault that a reboot did not clear is a human's: drain, never reboot again.
    auto after_reboot = [&](Finding f) {
      if (booted != facts.booted.end() && f.cause == kResetHeals) {
        f.cause.clear();
        f.evidence.push_back("the reboot at " + format_utc(booted->second) +
                             " did not clear it: not rebooted again");
      }
      return f;
    };
    if (r.verdict == Verdict::Critical) {
      out.bad_nodes.push_back(node);
      out.findings.push_back(after_reboot(node_finding(node, "gpu-fault", Severity::Critical, r)));
    } else if (r.verdict == Verdict::Warn) {
      out.findings.push_back(after_reboot(node_finding(node, "gpu-warn", Severity::Warning, r)));
    } else if (r.verdict == Verdict::Unknown) {
      ++out.unknown;
      out.findings.push_back(node_finding(node, "gpu-unknown", Severity::Unknown, r));
    } else if (auto f = repaired(g, facts, node, r)) {
      out.findings.push_back(*f);
    }
  }
  // Lemon nodes: many incidents (job crashes on it, GPU warnings) in the window; a node that
  // is CRITICAL now already has its finding.
  if (g.lemon_failures > 0)
    for (const auto& [node, incidents] : facts.incidents) {
      if (!is_lemon(g, facts, node)) continue;
      if (fresh.count(node) && fresh[node] == Verdict::Critical) continue;
      out.scopes.push_back("node:" + node + "/lemon");
      out.findings.push_back(make_finding("node:" + node, node, "lemon", Severity::Critical,
                                          "suspect node: " + std::to_string(incidents) +
                                              " incidents (job failures, GPU warnings) in " +
                                              format_duration(g.lemon_window)));
    }
  for (const auto& w : facts.running)
    if (auto f = task_on_bad_node(w, facts, fresh)) out.findings.push_back(*f);
  return out;
}

}  // namespace llmwatch

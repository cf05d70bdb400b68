// Node health: GPU verdicts for the nodes llmwatch manages. It runs after the job-log check so
// that it knows which watched task runs where; its plans drain a faulty node before the job
// that ran on it is restarted. Without sinfo there are no reasons or limits to go by: no node
// check.
//   observe  the managed nodes, and their latest node-check verdicts: from the results
//            directory and/or `srun --overlap` into the watched jobs
//   record   each node's health history (an event per change of verdict)
//   judge    rules/node_findings.h (pure); policy/node_policy.h plans drains and undrains
#include <optional>
#include <set>

#include "cycle/check.h"
#include "cycle/checks/node_check_srun.h"
#include "cycle/checks/node_history.h"
#include "cycle/checks/node_results.h"
#include "policy/node_policy.h"
#include "rules/fleet_figures.h"
#include "rules/node_findings.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_text.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/files.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

// The nodes llmwatch may act on: the configured list, else the nodes of watched jobs (and
// nodes it drained itself, so it can return them to service).
std::set<std::string> managed_nodes(const GpuSettings& g, const NodeFacts& facts) {
  std::set<std::string> managed;
  if (!g.manage_nodes.empty()) {
    for (const auto& h : hosts_in(g.manage_nodes)) managed.insert(h);
    return managed;
  }
  managed = facts.watched;
  for (const auto& [node, _] : facts.drained_at) managed.insert(node);
  return managed;
}

// When llmwatch drained each node sinfo lists that it still has drained: one query, not a
// lookup per node (16,000 of them) every cycle.
std::map<std::string, double> drained_by_us(Store& store, const std::vector<SlurmNode>& nodes) {
  auto drained = store.drained_nodes();
  std::map<std::string, double> out;
  for (const auto& n : nodes)
    if (auto it = drained.find(n.name); it != drained.end()) out.insert(*it);
  return out;
}

// The nodes llmwatch had rebooted that have booted since (scontrol's BootTime is not before
// the request; whole seconds): one `scontrol show node` per such node, a handful at most
// (the drain limits bound them).
std::map<std::string, double> booted_since_reboot(Store& store, SlurmClient& slurm) {
  std::map<std::string, double> out;
  for (const auto& [node, asked] : store.rebooting_nodes()) {
    auto show = slurm.show_node(node);
    auto boot = show.count("BootTime") ? slurm_timestamp(show["BootTime"]) : 0;
    if (boot > 0 && static_cast<double>(boot) + 1 > asked) out[node] = static_cast<double>(boot);
  }
  return out;
}

// A reboot is over once a check newer than the boot has spoken. Slurm returned the node to
// service by itself (nextstate=RESUME): one that passes is no longer llmwatch's drained node
// (nothing to undrain); one that still fails is drained for a human (rules/node_findings).
void finish_reboots(Store& store, NodeFacts& facts) {
  for (const auto& [node, boot] : facts.booted) {
    auto it = facts.reports.find(node);
    if (it == facts.reports.end() || it->second.ts < boot || it->second.verdict == Verdict::Unknown)
      continue;
    const NodeReport& r = it->second;
    store.put(kv::rebooting(node), "", facts.now);
    bool passes = r.verdict != Verdict::Critical;
    if (passes) {
      store.put(kv::drained(node), "", facts.now);
      facts.drained_at.erase(node);
    }
    store.add_event(facts.now, "reboot", node, passes ? "info" : "warning",
                    node +
                        (passes ? " is back in service after its reboot: node-check "
                                : " still fails after its reboot: node-check ") +
                        verdict_name(r.verdict) + " " + r.headline());
  }
}

// One node-check per node of every watched job's allocation, every job's at once under the
// cycle's remote budget (collect = "srun").
std::vector<NodeReport> collect_by_srun(CycleState& s, const std::vector<WatchedTask>& running,
                                        std::vector<std::string>& errors) {
  std::vector<NodeReport> out;
  std::set<std::int64_t> asked;
  std::vector<NodeCheckAsk> asks;
  for (const auto& w : running) {
    if (!asked.insert(w.task.job_id).second) continue;
    if (auto ask = ask_in_job(w.task, errors)) asks.push_back(std::move(*ask));
  }
  for (auto& got : node_checks_by_srun(s.config, s.slurm, s.remote, asks)) {
    if (!got.error.empty()) errors.push_back(got.error);
    for (auto& report : got.reports) out.push_back(std::move(report));
  }
  return out;
}

// #30: a restarted run is counted as resumed only once its new allocation's node-check has
// spoken. Where verdicts come from results files (collect = "results"), nothing may have looked
// at the nodes Slurm gave the new task (a GPU that broke while idle): the first cycle that sees
// a watched job's new task runs node-check in it, once. Its reports join the verdicts (a failing
// node is drained and the run restarted without it, as for any node of a watched job), and the
// history says whether the run was counted as resumed. The first task seen of a job is only
// noted: a run found running is not a restart. A check the remote budget deferred is asked again
// next cycle; one that could not run is said, and not asked again for that task.
std::vector<NodeReport> check_new_allocations(CycleState& s,
                                              const std::vector<WatchedTask>& running,
                                              std::vector<std::string>& errors) {
  std::vector<NodeReport> out;
  std::vector<const WatchedTask*> fresh;
  std::vector<NodeCheckAsk> asks;
  for (const auto& w : running) {
    const std::string task = w.task.run_key();
    auto seen = s.store.get(kv::allocation_checked(w.label));
    if (seen == task) continue;
    if (!seen) {
      s.store.put(kv::allocation_checked(w.label), task, s.now);
      continue;
    }
    if (auto ask = ask_in_job(w.task, errors)) {
      asks.push_back(std::move(*ask));
      fresh.push_back(&w);
    } else {
      s.store.put(kv::allocation_checked(w.label), task, s.now);
    }
  }
  auto answers = node_checks_by_srun(s.config, s.slurm, s.remote, asks);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    auto& got = answers[i];
    const WatchedTask& w = *fresh[i];
    if (got.deferred) continue;
    s.store.put(kv::allocation_checked(w.label), w.task.run_key(), s.now);
    const std::string run = "restarted run " + w.task.display_id() + " on " + w.task.nodes;
    std::vector<std::string> failing;
    for (const auto& report : got.reports)
      if (report.verdict == Verdict::Critical)
        failing.push_back(report.node + " " + report.headline());
    if (!got.error.empty() && got.reports.empty()) {
      errors.push_back(got.error);
      s.store.add_event(s.now, "resumed", w.label, "warning",
                        run + ": its allocation's node-check could not run (" + got.error +
                            "): counted as resumed unchecked");
    } else if (failing.empty()) {
      s.store.add_event(s.now, "resumed", w.label, "info",
                        run + " counted as resumed: its allocation's node-check passed on " +
                            std::to_string(got.reports.size()) + " of " +
                            std::to_string(w.task.node_count) + " nodes");
    } else {
      s.store.add_event(s.now, "resumed", w.label, "warning",
                        run + " not counted as resumed: its allocation's node-check failed (" +
                            join(failing, "; ") + ")");
    }
    for (auto& report : got.reports) out.push_back(std::move(report));
  }
  return out;
}

// The idle managed nodes whose last check as a short job is older than idle_check_every, each
// partition's as one short job (`srun --nodelist --immediate`: it runs now or not at all),
// kIdleNodesPerCycle at most a cycle. A node is asked once per period whatever the answer: a
// partition that cannot run the job now is not asked again every cycle.
constexpr size_t kIdleNodesPerCycle = 32;
std::vector<NodeReport> collect_idle(CycleState& s, const std::set<std::string>& managed,
                                     std::vector<std::string>& errors) {
  const Seconds every = s.config.gpu.idle_check_every;
  std::vector<NodeReport> out;
  if (every.count() <= 0) return out;
  auto asked = s.store.idle_checked_nodes();
  std::map<std::string, std::vector<std::string>> by_partition;
  size_t picked = 0;
  for (const auto& n : s.nodes->nodes) {
    if (picked == kIdleNodesPerCycle) break;
    if (!n.idle() || n.unusable() || n.partitions.empty() || !managed.count(n.name)) continue;
    if (auto it = asked.find(n.name); it != asked.end() &&
                                      s.now - it->second < static_cast<double>(every.count()) &&
                                      s.now >= it->second)
      continue;
    by_partition[n.partitions.front()].push_back(n.name);
    ++picked;
  }
  std::vector<NodeCheckAsk> asks;
  std::vector<const std::vector<std::string>*> nodes_of;
  for (const auto& [partition, nodes] : by_partition) {
    asks.push_back(
        {{"--nodelist=" + compress_hostlist(nodes), "--nodes=" + std::to_string(nodes.size()),
          "--ntasks-per-node=1", "--immediate=30", "--time=5", "--job-name=llmwatch-node-check",
          "--partition=" + partition},
         "on idle nodes of " + partition});
    nodes_of.push_back(&nodes);
  }
  auto answers = node_checks_by_srun(s.config, s.slurm, s.remote, asks);
  for (size_t i = 0; i < answers.size(); ++i) {
    auto& got = answers[i];
    // Asked once per period whatever the answer; a check the budget deferred was not asked.
    if (!got.deferred)
      for (const auto& node : *nodes_of[i])
        s.store.put(kv::idle_checked(node), std::to_string(s.now), s.now);
    if (!got.error.empty()) errors.push_back(got.error);
    for (auto& report : got.reports) out.push_back(std::move(report));
  }
  return out;
}

// A figure the fleet is judged by: its name, the share of the median under which a node is slow,
// and how long a node's value counts.
struct Yardstick {
  std::string figure;
  double below = 0.85;
  double max_age_s = 86400;
};

using NodeFigures = std::map<std::string, std::map<std::string, FigureAt>>;  // node -> figures

// What the nodes are judged by: each [[check]]'s fleet_compare labels (a figure counts for four
// of its check's periods, and at least a day: idle nodes are checked seldom), and every figure
// dcgmi diag measured on some node (for four idle-check periods, and at least a day).
std::vector<Yardstick> yardsticks(const Config& config, const NodeFigures& stored) {
  std::vector<Yardstick> out;
  for (const auto& check : config.checks) {
    if (check.where != "nodes") continue;
    for (const auto& label : check.fleet_compare)
      out.push_back({check.name + "/" + label, check.fleet_below,
                     std::max(86400.0, 4.0 * static_cast<double>(check.every.count()))});
  }
  const GpuSettings& g = config.gpu;
  if (g.dcgmi_fleet_below > 0) {
    const double max_age = std::max(86400.0, 4.0 * static_cast<double>(g.idle_check_every.count()));
    std::set<std::string> names;
    for (const auto& [node, figures] : stored)
      for (const auto& [name, at] : figures)
        if (name.rfind("dcgmi-diag/", 0) == 0) names.insert(name);
    for (const auto& name : names) out.push_back({name, g.dcgmi_fleet_below, max_age});
  }
  return out;
}

// Each node's figures against the fleet's: every node that reported the figure recently enough,
// whether llmwatch manages it or not (the fleet is the yardstick), judged; findings only for the
// managed ones. Each node's figures are read once a cycle.
void judge_fleet(Store& store, const Config& config, const NodeFacts& facts, CheckReport& r) {
  NodeFigures stored;
  for (const auto& [node, text] : store.kv_under(kv::kNodeFiguresPrefix))
    stored[node] = read_node_figures_at(text);
  for (const auto& y : yardsticks(config, stored)) {
    FleetFigureSettings settings;
    settings.figure = y.figure;
    settings.below = y.below;
    std::vector<NodeFigure> fleet;
    for (const auto& [node, figures] : stored)
      if (auto it = figures.find(y.figure);
          it != figures.end() && it->second.ts >= facts.now - y.max_age_s)
        fleet.push_back({node, it->second.value});
    for (const auto& n : fleet)
      if (facts.managed.count(n.node)) r.scopes.push_back("node:" + n.node + "/fleet-slow");
    for (auto& f : judge_fleet_figure(settings, fleet))
      if (facts.managed.count(f.subject)) r.findings.push_back(std::move(f));
  }
}

class NodeHealthCheck : public Check {
 public:
  std::string name() const override { return "node-health"; }
  int stage() const override { return 2; }
  bool enabled(const CycleState& s) const override { return s.config.gpu.enabled && s.nodes_ok(); }
  CheckReport judge(CycleState& s) override {
    const GpuSettings& g = s.config.gpu;
    NodeFacts facts;
    facts.now = s.now;
    facts.nodes = s.nodes->nodes;
    facts.running = running_tasks(s.work);
    facts.watched = watched_nodes(facts.running);
    facts.drained_at = drained_by_us(s.store, facts.nodes);
    facts.managed = managed_nodes(g, facts);
    CheckReport r;
    if (g.collect != "srun" && !g.results_dir.empty())
      for (const auto& node : facts.managed)
        if (auto report = read_node_result(g.results_dir, node))
          facts.reports[node] = std::move(*report);
    std::vector<std::string> errors;
    std::vector<NodeReport> collected;
    if (g.collect != "results")
      collected = collect_by_srun(s, facts.running, errors);
    else if (g.check_new_allocations)
      collected = check_new_allocations(s, facts.running, errors);
    for (auto& report : collect_idle(s, facts.managed, errors))
      collected.push_back(std::move(report));
    for (auto& report : collected)
      if (facts.managed.count(report.node)) facts.reports[report.node] = std::move(report);
    for (const auto& e : errors) {
      ++r.unknown;
      s.store.add_event(s.now, "node-check", "llmwatch", "warning", e);
    }
    facts.booted = booted_since_reboot(s.store, s.slurm);
    finish_reboots(s.store, facts);
    record_history(s.store, facts, g.result_max_age);
    if (g.lemon_failures > 0)
      facts.incidents =
          s.store.incident_counts(s.now - static_cast<double>(g.lemon_window.count()));

    auto judged = judge_nodes(g, facts);
    s.node_plans = plan_node_findings(g, facts.nodes, judged.findings);
    s.unusable.insert(s.unusable.end(), judged.bad_nodes.begin(), judged.bad_nodes.end());
    r.findings = std::move(judged.findings);
    r.scopes = std::move(judged.scopes);
    judge_fleet(s.store, s.config, facts, r);
    r.unknown += judged.unknown;
    return r;
  }
};

LLMWATCH_REGISTER_CHECK(NodeHealthCheck);

}  // namespace
}  // namespace llmwatch

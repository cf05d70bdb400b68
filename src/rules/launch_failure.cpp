#include "rules/launch_failure.h"

#include <array>
#include <string_view>
#include <utility>

#include "rules/job_progress.h"
#include "util/strings.h"
#include "util/units.h"

namespace llmwatch {

bool is_launch_failure_reason(const std::string& reason) {
  static constexpr std::array<std::string_view, 3> kReasons = {
      "Prolog error", "batch job complete failure", "Duplicate jobid"};
  for (auto r : kReasons)
    if (reason == r) return true;
  return false;
}

std::vector<LaunchFailedNode> launch_failure_nodes(const std::vector<SlurmNode>& nodes,
                                                   const SlurmJob& task) {
  std::vector<LaunchFailedNode> out;
  for (const auto& n : nodes) {
    if (!n.unusable() || !is_launch_failure_reason(n.reason)) continue;
    if (n.reason_at != 0 && n.reason_at < task.submit_time - kLaunchDrainBefore) continue;
    out.push_back({n.name, n.reason, n.reason_at});
  }
  return out;
}

bool charges_the_node(const LaunchFailedNode& node) {
  return node.reason != "Duplicate jobid";
}

const SlurmJob* launch_failed_entry(const std::vector<SlurmJob>& entries) {
  for (const auto& e : entries)
    if (e.launch_failed()) return &e;
  return nullptr;
}

SlurmJob* launch_failed_entry(std::vector<SlurmJob>& entries) {
  return const_cast<SlurmJob*>(launch_failed_entry(std::as_const(entries)));
}

namespace {

std::string node_list(const std::vector<LaunchFailedNode>& nodes) {
  std::vector<std::string> names;
  for (const auto& n : nodes) names.push_back(n.name);
  return join(names, ", ");
}

}  // namespace

Finding launch_failed_finding(const std::string& label, const SlurmJob& task,
                              const LaunchFailureContext& context) {
  std::string summary = task.display_id() + " could not start: its launch failed";
  if (!context.drained.empty()) summary += " on " + node_list(context.drained);
  summary += " and Slurm holds it";
  std::string why_not;
  if (!context.nodes_known)
    why_not = "sinfo did not answer: which node Slurm took out is not known";
  else if (context.drained.empty())
    why_not = "Slurm took no node out for it";
  else if (!context.required_out.empty())
    why_not = "it must run on " + join(context.required_out, ", ") + ", which are out of service";
  else if (context.released_before)
    why_not =
        "llmwatch released it within the hour and it failed again: the cause may be the job's "
        "(its owner's environment, its directories), not a node's";
  if (why_not.empty())
    summary += std::string("; Slurm took ") + (context.drained.size() == 1 ? "that node" : "them") +
               " out, so the run starts elsewhere once released";
  else
    summary += " until a person releases it (" + why_not + ")";
  Finding f = make_finding("job:" + label, label, "launch-failed", Severity::Critical, summary);
  // Text squeue gives no requeue count (0): said only where Slurm gave it.
  f.evidence.push_back(task.display_id() + " " + task.state + " (" + task.reason_shown() + ")" +
                       (task.restarts > 0 ? ", requeued " + std::to_string(task.restarts) +
                                                " time" + (task.restarts == 1 ? "" : "s")
                                          : ""));
  for (const auto& n : context.drained)
    f.evidence.push_back(n.name + " drained by Slurm" +
                         (n.at ? " at " + format_utc(static_cast<double>(n.at)) : "") + ": " +
                         n.reason);
  if (!task.required_nodes.empty()) f.evidence.push_back("it must run on " + task.required_nodes);
  if (why_not.empty()) f.cause = kRelaunchable;
  f.episode = task_episode(task.display_id(), task.submit_time);
  return f;
}

}  // namespace llmwatch

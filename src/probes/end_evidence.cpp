#include "probes/end_evidence.h"

#include <cstdlib>
#include <map>

#include "slurm/hostlist.h"
#include "slurm/slurm_node.h"
#include "slurm/slurm_text.h"

namespace llmwatch {
namespace {

constexpr size_t kMaxAddressLookups = 64;  // one scontrol each; larger runs map by name

bool names_addresses(const std::vector<std::string>& lines) {
  for (const auto& l : lines)
    if (l.find("NCCL") != std::string::npos || l.find("Gloo") != std::string::npos ||
        l.find("peer") != std::string::npos)
      return true;
  return false;
}

}  // namespace

EndObservation observe_end(SlurmClient& slurm, const SlurmJob& task,
                           const std::optional<SlurmJob>& final_entry,
                           std::map<std::string, std::string> show,
                           std::vector<std::string> log_tail) {
  EndObservation o;
  o.evidence.task = task.display_id();
  o.evidence.log_tail = std::move(log_tail);
  std::string nodes = task.nodes;
  if (final_entry) {
    o.evidence.source = "squeue";
    o.evidence.state = final_entry->state;
    o.evidence.reason = final_entry->reason;
  }
  if (!show.empty()) {
    o.evidence.source = "scontrol";
    std::string state = show["JobState"];
    if (!state.empty()) o.evidence.state = state;
    if (!show["Reason"].empty()) o.evidence.reason = show["Reason"];
    o.evidence.exit_code = show["ExitCode"];
    o.evidence.end_time = slurm_timestamp(show["EndTime"]);
    if (auto listed = scontrol_field(show, "NodeList"); listed && !listed->empty()) nodes = *listed;
    long tasks = std::strtol(show["NumTasks"].c_str(), nullptr, 10);
    long node_count = std::strtol(show["NumNodes"].c_str(), nullptr, 10);
    if (tasks > node_count && node_count > 0 && tasks % node_count == 0)
      o.layout.ranks_per_node = static_cast<int>(tasks / node_count);
  } else if (!final_entry) {
    // slurmctld has forgotten the task (MinJobAge): where the cluster keeps accounting,
    // slurmdbd still knows how it ended ("CANCELLED by 1000", "NODE_FAIL", the exit code).
    auto acct = slurm.accounting(task.display_id(), task.start_time);
    if (!acct.empty()) {
      o.evidence.source = "sacct";
      o.evidence.state = acct["State"];
      o.evidence.reason = acct["Reason"];
      o.evidence.exit_code = acct["ExitCode"];
      o.evidence.end_time = slurm_timestamp(acct["End"]);
      if (nodes.empty() && acct["NodeList"] != "None assigned") nodes = acct["NodeList"];
    }
  }
  o.layout.nodes = hosts_in(nodes);
  if (names_addresses(o.evidence.log_tail) && o.layout.nodes.size() <= kMaxAddressLookups) {
    std::vector<std::pair<std::string, std::string>> node_addrs;
    for (const auto& n : o.layout.nodes) node_addrs.emplace_back(n, slurm.show_node(n)["NodeAddr"]);
    o.layout.address_to_node = nodes_by_address(node_addrs);
  }
  return o;
}

}  // namespace llmwatch

#include "probes/rank_processes.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "probes/proc_status.h"
#include "util/files.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

constexpr const char* kRanksHeader = "=== llmwatch-ranks node=";
// Far beyond any job (16,384 nodes x 8 GPUs): a larger figure is not a rank.
constexpr int kMaxRanks = 1 << 20;

int small_number(const std::string& s, int limit) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v >= 0 && v <= limit ? v : -1;
}

// A job step as slurmd names it: "batch", "extern", "interactive", "0", "12+1" (a
// heterogeneous job's component).
bool step_name(const std::string& s) {
  return !s.empty() && s.size() <= 32 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+';
  });
}

std::string get(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

}  // namespace

std::map<std::string, std::string> process_environment(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  std::map<std::string, std::string> env;
  for (const auto& var : split(s.str(), '\0'))
    if (auto eq = var.find('='); eq != std::string::npos)
      env.emplace(var.substr(0, eq), var.substr(eq + 1));
  return env;
}

int parent_of(int pid) {
  const auto status = read_text_file("/proc/" + std::to_string(pid) + "/status").value_or("");
  const std::string value(proc_status_value(status, "PPid"));
  return std::max(0, small_number(value, std::numeric_limits<int>::max()));
}

RankProcess process_rank(int pid, int ppid, const std::map<std::string, std::string>& env) {
  RankProcess p;
  p.pid = pid;
  p.ppid = ppid;
  // RANK first: under torchrun every worker of a node shares the node's SLURM_PROCID.
  for (auto [rank, world] :
       {std::pair{"RANK", "WORLD_SIZE"}, std::pair{"SLURM_PROCID", "SLURM_NTASKS"}}) {
    if (!env.count(rank)) continue;
    p.rank = small_number(get(env, rank), kMaxRanks);
    p.world = small_number(get(env, world), kMaxRanks);
    p.by = rank;
    break;
  }
  return p;
}

void unname_tasks_beside_srun(std::vector<RankProcess>& processes) {
  auto jobs_own = [](const std::string& s) {
    return s == "batch" || s == "extern" || s == "interactive";
  };
  const bool srun_step = std::any_of(processes.begin(), processes.end(), [&](const RankProcess& p) {
    return !p.step.empty() && !jobs_own(p.step);
  });
  if (!srun_step) return;
  for (auto& p : processes)
    if (jobs_own(p.step) && p.by == "SLURM_PROCID") {
      p.rank = p.world = -1;
      p.by.clear();
    }
}

std::string rank_variable(const std::vector<RankProcess>& processes, bool by_task) {
  const bool any_rank = std::any_of(processes.begin(), processes.end(),
                                    [](const RankProcess& p) { return p.by == "RANK"; });
  return by_task || !any_rank ? "SLURM_PROCID" : "RANK";
}

bool own_rank_process(const std::vector<RankProcess>& processes, const RankProcess& p,
                      const std::string& by) {
  return p.by == by && std::none_of(processes.begin(), processes.end(), [&](const RankProcess& q) {
           return q.pid == p.ppid && q.by == by && q.rank == p.rank;
         });
}

std::string process_role(const std::vector<RankProcess>& processes, const RankProcess& p) {
  const std::string by = rank_variable(processes, false);
  if (p.by != by) return "other";
  return own_rank_process(processes, p, by) ? "rank" : "worker";
}

std::vector<int> own_rank_pids(const std::vector<RankProcess>& processes) {
  const std::string by = rank_variable(processes, false);
  std::vector<int> out;
  for (const auto& p : processes)
    if (own_rank_process(processes, p, by)) out.push_back(p.pid);
  return out;
}

std::vector<int> every_rank_look_pids(const std::vector<RankProcess>& processes) {
  auto pids = own_rank_pids(processes);
  if (pids.size() > kMaxExitLooks) pids.clear();
  return pids;
}

int rank_process_pid(const std::vector<RankProcess>& processes, int rank, bool by_task) {
  const std::string by = rank_variable(processes, by_task);
  int found = 0;
  for (const auto& p : processes) {
    if (p.rank != rank || !own_rank_process(processes, p, by)) continue;
    if (found) return 0;  // two processes say they are the rank: neither is looked into
    found = p.pid;
  }
  return found;
}

std::vector<int> rank_look_pids(const std::vector<RankProcess>& processes, int rank, bool by_task) {
  const int pid = rank_process_pid(processes, rank, by_task);
  if (!pid) return {};
  std::vector<int> out = {pid};
  if (by_task)
    for (const auto& p : processes)
      if (p.ppid == pid && own_rank_process(processes, p, "RANK")) out.push_back(p.pid);
  if (out.size() > kMaxExitLooks) out.resize(1);
  return out;
}

std::string format_node_ranks(const NodeRanks& node) {
  std::string out = std::string(kRanksHeader) + node.node +
                    " processes=" + std::to_string(node.processes.size()) + " ===\n";
  for (const auto& p : node.processes)
    out += "pid=" + std::to_string(p.pid) + " ppid=" + std::to_string(p.ppid) +
           " rank=" + std::to_string(p.rank) + " world=" + std::to_string(p.world) +
           " by=" + (p.by.empty() ? "-" : p.by) + (step_name(p.step) ? " step=" + p.step : "") +
           (p.exiting.empty() ? "" : " exiting=" + p.exiting) + "\n";
  return out;
}

namespace {

// "node-1 processes=3 ===": the node and the count; nullopt for anything else.
std::optional<std::pair<std::string, int>> header_fields(std::string_view rest) {
  auto fields = split(std::string(rest), ' ');
  if (fields.size() != 3 || fields[2] != "===" || fields[0].empty() ||
      fields[0].find_first_of("=\t") != std::string::npos || fields[1].rfind("processes=", 0) != 0)
    return std::nullopt;
  int count = small_number(fields[1].substr(10), kMaxRanks);
  if (count < 0) return std::nullopt;
  return std::pair{fields[0], count};
}

// A frame's name as process_exit.h gives it: a C identifier.
bool identifier(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// "pid=P ppid=Q rank=R world=W by=B", every field once, in that order, then "step=S" where
// slurmd named it and "exiting=F" where that was seen, in that order.
std::optional<RankProcess> process_line(std::string_view line) {
  auto fields = split(std::string(line), ' ');
  const char* keys[] = {"pid=", "ppid=", "rank=", "world=", "by="};
  std::string step, exiting;
  constexpr std::string_view kExiting = "exiting=", kStep = "step=";
  if (fields.size() > 5 && fields.back().rfind(kExiting, 0) == 0) {
    exiting = fields.back().substr(kExiting.size());
    if (!identifier(exiting)) return std::nullopt;
    fields.pop_back();
  }
  if (fields.size() > 5 && fields.back().rfind(kStep, 0) == 0) {
    step = fields.back().substr(kStep.size());
    if (!step_name(step)) return std::nullopt;
    fields.pop_back();
  }
  if (fields.size() != 5) return std::nullopt;
  for (int i = 0; i < 5; ++i)
    if (fields[i].rfind(keys[i], 0) != 0) return std::nullopt;
  auto value = [&](int i) { return fields[i].substr(std::string(keys[i]).size()); };
  auto signed_small = [&](int i) {
    return value(i) == "-1" ? -1 : small_number(value(i), kMaxRanks);
  };
  RankProcess p;
  p.pid = small_number(value(0), std::numeric_limits<int>::max());
  p.ppid = small_number(value(1), std::numeric_limits<int>::max());
  p.rank = signed_small(2);
  p.world = signed_small(3);
  p.by = value(4) == "-" ? "" : value(4);
  p.exiting = exiting;
  p.step = step;
  // A number that is not one (rank=x) is not read as "no rank": the line is bad.
  if (p.pid <= 0 || p.ppid < 0 || (p.rank < 0 && value(2) != "-1") ||
      (p.world < 0 && value(3) != "-1") ||
      !(p.by.empty() || p.by == "RANK" || p.by == "SLURM_PROCID"))
    return std::nullopt;
  return p;
}

}  // namespace

std::vector<NodeRanks> parse_node_ranks(const std::string& text) {
  std::vector<NodeRanks> out;
  std::vector<int> counted;  // what each block's header said it holds
  bool in_block = false;     // a block with a bad header: its lines are no other block's
  for (const auto& raw : split(text, '\n')) {
    std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (line.rfind(kRanksHeader, 0) == 0) {
      auto header = header_fields(line.substr(std::string_view(kRanksHeader).size()));
      in_block = header.has_value();
      if (in_block) {
        out.push_back({header->first, {}, true});
        counted.push_back(header->second);
      }
      continue;
    }
    if (!in_block) continue;
    if (auto p = process_line(line))
      out.back().processes.push_back(*p);
    else
      out.back().whole = false;
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].processes.size() != static_cast<size_t>(counted[i])) out[i].whole = false;
  return out;
}

}  // namespace llmwatch

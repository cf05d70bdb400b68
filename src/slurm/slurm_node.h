#pragma once
// One node as `sinfo --json` reports it, and whether it can take work.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace llmwatch {

struct SlurmNode {
  std::string name;
  std::string state;               // idle, allocated, mixed, down, ...
  std::vector<std::string> flags;  // DRAIN, NOT_RESPONDING, ...
  std::string reason;
  std::string reason_set_by;
  std::vector<std::string> partitions;
  // NodeAddr: how its peers name it (an NCCL error names a peer by address). Slurm prints the
  // node's name when none is configured.
  std::string address;
  std::int64_t reason_at = 0;  // when the reason was set (reason_changed_at); 0: not said

  bool drained() const;  // DRAIN flag (draining or drained)
  bool down() const;     // down, fail, or not responding
  bool unusable() const { return drained() || down(); }
  bool idle() const;  // no job on it ("idle" in 22.05, "IDLE" from 23.02)
  // "idle+DRAIN", for status and evidence lines.
  std::string describe() const;
};

// Whose a node's drain reason is. llmwatch's reasons start with kOwnReasonPrefix; it drains
// and undrains only over its own (or no) reason, never over a human's.
inline constexpr const char* kOwnReasonPrefix = "llmwatch:";
enum class ReasonBy { Nobody, Llmwatch, Someone };
ReasonBy reason_by(const std::string& reason);  // "", "(null)" and "none" are Nobody's
// A drained or down node llmwatch may return to service: its reason is llmwatch's own, or
// (when allowed) Slurm's "Kill task failed".
bool undrain_allowed(const std::string& reason, bool kill_task_failed_too);
bool undrain_allowed(const SlurmNode& node, bool kill_task_failed_too);

// Address -> node from (node, NodeAddr) pairs, for naming the peer an NCCL error names. An
// address several nodes share (one host running many slurmds) names none of them; nor does a
// node's own name (no NodeAddr configured).
std::map<std::string, std::string> nodes_by_address(
    const std::vector<std::pair<std::string, std::string>>& node_addrs);

struct SinfoParse {
  std::vector<SlurmNode> nodes;
  std::string error;
  bool ok() const { return error.empty(); }
};

SinfoParse parse_sinfo_json(std::string_view text);

}  // namespace llmwatch

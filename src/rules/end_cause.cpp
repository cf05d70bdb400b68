#include "rules/end_cause.h"

#include <array>
#include <optional>
#include <string_view>

#include "probes/training_log.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

struct Signature {
  EndClass cls;
  std::array<std::string_view, 8> markers;  // any one marks the class ("" ends the list)
};

// Most specific first: an OOM often ends in an NCCL abort on the other ranks, and a GPU
// error in a traceback, so the first class in this order that any line shows wins.
constexpr Signature kSignatures[] = {
    {EndClass::OutOfMemory,
     {"CUDA out of memory", "OutOfMemoryError", "oom-kill", "oom_kill", "Out of memory",
      "Killed process", "", ""}},
    {EndClass::GpuError,
     {"NVRM: Xid", "uncorrectable ECC", "CUDA error: an illegal memory access",
      "CUDA error: unspecified launch failure", "GPU has fallen off the bus",
      "CUDA error: uncorrectable", "ncclUnhandledCudaError", "cudaErrorECCUncorrectable"}},
    {EndClass::Network,
     {"NCCL WARN", "NCCL error", "ncclSystemError", "ncclRemoteError", "DistBackendError",
      "Watchdog caught collective operation timeout", "Connection reset by peer", "Gloo"}},
    {EndClass::Software, {"Traceback (most recent call last)", "", "", "", "", "", "", ""}},
};

// slurmstepd's own line in the task's output (probes/training_log.h's stepd_cancel): what
// Slurm did, written when Slurm itself may since have forgotten the task. The class it names;
// nullopt when none.
std::optional<EndClass> stepd_verdict(const std::string& line) {
  if (stepd_cancel(line) == StepdCancel::None) return std::nullopt;
  if (contains(line, "DUE TO TIME LIMIT")) return EndClass::Timeout;
  if (contains(line, "DUE TO PREEMPTION")) return EndClass::Preempted;
  if (contains(line, "DUE TO NODE FAILURE")) return EndClass::NodeFailure;
  return EndClass::Cancelled;
}

std::string state_line(const EndEvidence& e) {
  std::string s = std::string(e.source == "sacct" ? "Slurm accounting (sacct)" : "Slurm") +
                  ": task " + e.task + " " + (e.state.empty() ? "no longer known" : e.state);
  if (!e.exit_code.empty()) s += ", exit code " + e.exit_code;
  if (!e.reason.empty() && e.reason != "None") s += ", reason " + e.reason;
  return s;
}

}  // namespace

const char* end_class_name(EndClass c) {
  switch (c) {
    case EndClass::Completed:
      return "completed";
    case EndClass::Cancelled:
      return "cancelled";
    case EndClass::Timeout:
      return "time limit";
    case EndClass::NodeFailure:
      return "node failure";
    case EndClass::Preempted:
      return "preempted";
    case EndClass::OutOfMemory:
      return "out of memory";
    case EndClass::Network:
      return "NCCL or network error";
    case EndClass::GpuError:
      return "GPU error";
    case EndClass::Software:
      return "software error";
    case EndClass::SilentFailure:
      return "silent failure";
    case EndClass::Unknown:
      return "unknown cause";
  }
  return "unknown cause";
}

bool may_be_hardware(EndClass c) {
  return c == EndClass::NodeFailure || c == EndClass::Network || c == EndClass::GpuError;
}

bool is_failure(EndClass c) {
  return c == EndClass::OutOfMemory || c == EndClass::Network || c == EndClass::GpuError ||
         c == EndClass::Software || c == EndClass::SilentFailure;
}

EndVerdict classify_end(const EndEvidence& e) {
  EndVerdict v;
  v.evidence.push_back(state_line(e));
  auto decided = [&](EndClass c) {
    v.cls = c;
    v.summary = std::string("task ") + e.task + " ended: " + end_class_name(c);
    if (c == EndClass::Cancelled)
      v.summary += e.cancelled_by_llmwatch ? " (by llmwatch)" : " (by a person)";
    return v;
  };
  // What Slurm knows decides first: it saw the end.
  const std::string& s = e.state;
  if (s == "COMPLETED" || e.reached_max_steps) return decided(EndClass::Completed);
  if (s.rfind("CANCELLED", 0) == 0) return decided(EndClass::Cancelled);
  if (s == "TIMEOUT" || s == "DEADLINE") return decided(EndClass::Timeout);
  if (s == "NODE_FAIL") return decided(EndClass::NodeFailure);
  if (s == "PREEMPTED") return decided(EndClass::Preempted);
  if (s == "OUT_OF_MEMORY") return decided(EndClass::OutOfMemory);
  // Gone from Slurm, or FAILED: slurmstepd's own line decides before any traceback (#26.4:
  // the SIGTERM traceback torchrun prints on a person's scancel read as a software error, and
  // the cancelled run was restarted). The last such line is the end.
  for (auto line = e.log_tail.rbegin(); line != e.log_tail.rend(); ++line)
    if (auto c = stepd_verdict(*line)) {
      v.evidence.push_back(*line);
      return decided(*c);
    }
  // The logs say why.
  for (const auto& sig : kSignatures) {
    std::vector<std::string> lines;  // the class's lines, at most 3, as evidence
    for (const auto& line : e.log_tail)
      for (auto marker : sig.markers)
        if (!marker.empty() && contains(line, marker)) {
          if (lines.size() < 3) lines.push_back(line);
          break;
        }
    if (lines.empty()) continue;
    v.evidence.insert(v.evidence.end(), lines.begin(), lines.end());
    return decided(sig.cls);
  }
  if (s.empty() && e.exit_code == "0:0") return decided(EndClass::Completed);
  // Slurm saw the run fail, and nothing printed why: a crash all the same (a segfault in an
  // extension, a SIGKILL from an OOM killer no cgroup counted, a rank's exit(1)).
  if (s == "FAILED") return decided(EndClass::SilentFailure);
  return decided(EndClass::Unknown);
}

}  // namespace llmwatch

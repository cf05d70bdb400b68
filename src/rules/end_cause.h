#pragma once
// Why a run ended: the post-mortem's class, from what Slurm says of the task (state, reason,
// exit code) and what its logs printed last. Each class has its own default policy
// (policy.cpp): a completed or cancelled run is never restarted, a time limit continues the
// run, a node failure or preemption restarts it, an OOM, a Python error or a failure nothing
// explained restarts it within the crash-loop budget without blaming a node, and a network or
// GPU error restarts it off the node attribution names. Pure.
#include <string>
#include <vector>

#include "probes/end_evidence.h"

namespace llmwatch {

enum class EndClass {
  Completed,      // exit 0, or max steps reached
  Cancelled,      // scancel by a human (or by llmwatch, known from its journal)
  Timeout,        // the time limit
  NodeFailure,    // NODE_FAIL: Slurm lost a node
  Preempted,      // PREEMPTED, or requeued by Slurm
  OutOfMemory,    // host OOM killer or CUDA out of memory
  Network,        // NCCL, Gloo, InfiniBand, sockets
  GpuError,       // CUDA/driver errors, Xid, uncorrectable ECC
  Software,       // a Python traceback with no hardware or network signature
  SilentFailure,  // Slurm's FAILED, and nothing printed why (a segfault, an uncounted OOM kill)
  Unknown,        // nothing says why, nor whether it failed
};

const char* end_class_name(EndClass c);
// The classes whose cause may be a node: attribution is asked only for these.
bool may_be_hardware(EndClass c);
// The classes of a run that failed by itself: an error the logs or Slurm name (an OOM kill,
// NCCL, a GPU, a traceback), or Slurm's FAILED with nothing said why. Not a completion, a
// cancel, a time limit, a preemption, a node Slurm lost, nor an end nobody can explain. What
// the step loop counts (job_progress.h).
bool is_failure(EndClass c);

struct EndVerdict {
  EndClass cls = EndClass::Unknown;
  std::string summary;                // "ended: NCCL or network error (task 7, FAILED 1:0)"
  std::vector<std::string> evidence;  // the state line and the log lines that decided it
};

EndVerdict classify_end(const EndEvidence& e);

}  // namespace llmwatch

#include "cycle/supervisor.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "cycle/check.h"
#include "cycle/cycle_state.h"
#include "cycle/failure_domain.h"
#include "cycle/phases.h"

namespace llmwatch {

// The supervisor only sequences the phases. Each is a failure domain: whatever fails in
// one is recorded, and the cycle record, the alert flush and the heartbeat still happen.
CycleResult Supervisor::run_cycle(double now) {
  CycleState state(config_, store_, slurm_, now);
  state.fence = fence_;
  state.result.started = now;
  auto phase = [&](const char* name, void (*fn)(CycleState&)) {
    Status done = run_guarded(name, [&] { fn(state); });
    if (done) return;
    spdlog::error("cycle: {}", done.error());
    state.errors.push_back(done.error());
  };
  phase("checks", run_checks);
  phase("act", act_phase);
  phase("record", record_phase);
  phase("notify", notify_phase);
  finish_phase(state);
  return std::move(state.result);
}

}  // namespace llmwatch

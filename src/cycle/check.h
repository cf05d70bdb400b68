#pragma once
// A check observes one part of the world and judges it: Slurm, the host clock, storage,
// job logs, node health, llmwatch's own chain. Each registers itself in its own file
// (LLMWATCH_REGISTER_CHECK) and is its own failure domain. The framework (run_checks) does
// for every check, the same way, what each used to do by hand:
// - ordering: checks run stage by stage; a later stage reads what an earlier one observed;
// - concurrency: the observe() of the checks of one stage run in parallel threads;
// - timing and success: one ProbeStat per check (or the check's own, finer ones);
// - failure: an exception becomes an `unknown` finding "check:<name>/failed", counts as an
//   unknown probe, and the check's scopes are dropped, so none of its findings resolves
//   falsely on a cycle that did not look;
// - scopes: a finding resolves only when a check that covers its key ran and did not see it.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cycle/cycle_state.h"

namespace llmwatch {

struct CheckReport {
  std::vector<Finding> findings;
  std::vector<std::string> scopes;  // key prefixes fully evaluated this cycle
  std::vector<ProbeStat> probes;    // finer statistics; empty: one for the whole check
  int unknown = 0;                  // targets that could not be looked at
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string name() const = 0;
  // Stage 0 reads the world directly; stage 1 needs the queue; stage 2 needs stage 1.
  virtual int stage() const = 0;
  virtual bool enabled(const CycleState&) const { return true; }
  // Sequential, before observe: read what the store remembers.
  virtual void prepare(CycleState&) {}
  // Concurrent with the other checks of the stage: writes only this check's own fields of
  // the state and never touches the store. Every wait inside has its own deadline.
  virtual void observe(CycleState&) {}
  // Sequential: turns what was observed into findings.
  virtual CheckReport judge(CycleState& state) = 0;
};

// Seconds since t0 on the monotonic clock: how checks time themselves and their targets.
double seconds_since(std::chrono::steady_clock::time_point t0);

using CheckFactory = std::function<std::unique_ptr<Check>()>;
// Called by LLMWATCH_REGISTER_CHECK at static initialization.
bool register_check(CheckFactory factory);
// One instance of every registered check, in stage order (then by name).
std::vector<std::unique_ptr<Check>> make_checks();
std::vector<std::string> check_names();

// Runs every enabled check and merges their reports into the state.
void run_checks(CycleState& state);

#define LLMWATCH_REGISTER_CHECK(Class)                    \
  [[maybe_unused]] static const bool registered_##Class = \
      ::llmwatch::register_check([] { return std::unique_ptr<::llmwatch::Check>(new Class()); })

}  // namespace llmwatch

#pragma once
// One phase of a cycle, run alone against a FakeSlurm and a real Store in a temporary
// directory: the test fills the CycleState as the phases before would have, runs the phase,
// and reads what it did (Slurm commands, the journal, the store). Milliseconds, no cluster.
#include <memory>
#include <stdexcept>
#include <string>

#include "config/config.h"
#include "cycle/cycle_state.h"
#include "fake_slurm.h"
#include "store/store.h"
#include "store_reading.h"
#include "test_util.h"

namespace llmwatch::testing {

// The phase tests' clock.
inline constexpr double kNow = 1'700'000'600;

struct PhaseFixture {
  TempDir dir;
  FakeSlurm slurm;
  Config config;
  std::unique_ptr<Store> store;

  // `toml` follows an [llmwatch] table that already names the state directory.
  explicit PhaseFixture(const std::string& toml = "", const std::string& llmwatch_keys = "") {
    auto loaded = load_config_string("[llmwatch]\nstate_dir = \"" + dir / "state" + "\"\n" +
                                         "resolve_after_cycles = 1\n" + llmwatch_keys + toml,
                                     "phase-test.toml");
    if (!loaded.config) throw std::runtime_error("bad test config");
    config = *loaded.config;
    store = std::make_unique<Store>(config.state_dir);
  }

  CycleState state(double now) { return CycleState(config, *store, slurm, now); }

  static SlurmJob running(std::int64_t id, const std::string& name) {
    SlurmJob j;
    j.job_id = id;
    j.name = name;
    j.state = "RUNNING";
    j.nodes = "gpu[1-2]";
    j.start_time = 1'700'000'000;
    return j;
  }

  // The job-log check's work for the configured job `name`, its task running.
  JobWork& watch(CycleState& s, const std::string& name, std::int64_t task_id) {
    JobWork w;
    for (const auto& j : config.jobs)
      if (j.name == name) w.settings = &j;
    if (!w.settings) throw std::runtime_error("no such job in the test config: " + name);
    w.label = name;
    w.obs.running = running(task_id, name);
    w.obs.entries = {*w.obs.running};
    s.work.push_back(std::move(w));
    return s.work.back();
  }

  bool firing(const std::string& key) { return is_firing(*store, key); }
  std::string events() { return event_lines(*store); }
};

}  // namespace llmwatch::testing

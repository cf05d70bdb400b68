#pragma once
// Drives whole cycles of the real Supervisor from arbitrary bytes, and checks the properties
// that must hold whatever the input: nothing throws out of a cycle, nothing is done on an
// unknown, no Slurm command runs that the journal does not hold, and every record a view or
// an alert reads stays valid JSON. Used by a seeded property test (tests/cycle) and by a
// libFuzzer target (tests/fuzz/fuzz_cycle.cpp). Returns "" or the first violated property.
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "config/config.h"
#include "cycle/supervisor.h"
#include "fake_slurm.h"
#include "store/store.h"
#include "test_util.h"
#include "views/status_view.h"

namespace llmwatch::testing {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool done() const { return pos_ >= size_; }
  std::string chunk(std::size_t n) {
    n = std::min(n, size_ - pos_);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  template <class T, std::size_t N>
  const T& pick(const T (&options)[N]) {
    return options[next() % N];
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_, pos_ = 0;
};

inline std::string cycle_config(const std::string& dir) {
  return "[llmwatch]\nstate_dir = \"" + dir + "/state\"\ninterval = \"5s\"\n" +
         "resolve_after_cycles = 1\n"
         "[[alert.exec]]\nmin_severity = \"info\"\ncommand = [\"/bin/true\"]\n"
         "[[job]]\nname = \"tr\"\nstale_after = \"60s\"\nstartup_grace = \"30s\"\n"
         "on_hang = [\"alert\", \"cancel\", \"restart\"]\non_absent = [\"restart\"]\n"
         "on_crash = [\"restart\"]\n"
         "[[job]]\nname = \"x$(rm -rf)\"\non_absent = [\"alert\", \"restart\"]\n";
}

// Runs up to 6 cycles chosen by `data` in `dir` (an empty directory); "" when every
// property held.
inline std::string drive_cycles(const std::uint8_t* data, std::size_t size,
                                const std::string& dir) {
  auto loaded = load_config_string(cycle_config(dir), "cycle-driver.toml");
  if (!loaded.config) return "the driver's own config is invalid";
  Config config = *loaded.config;
  for (auto& j : config.jobs) j.user = "trainer";
  Store store(config.state_dir);
  FakeSlurm slurm;
  ByteReader in(data, size);
  const std::string logs[] = {dir + "/tr.log", dir + "/other.log", "", "/nonexistent/x.log"};
  const char* names[] = {"tr", "tr", "x$(rm -rf)", "\x1b[2Jevil", "tr\xE2\x96"};
  const char* states[] = {"RUNNING",    "PENDING",   "SUSPENDED", "REQUEUE_HOLD",
                          "COMPLETING", "COMPLETED", "NODE_FAIL", "STOPPED",
                          "",           "\xff"};
  const char* nodes[] = {"node-1", "node-[1-3]", "node-[1-", "", "n[0-99999999999]"};
  double now = 1'800'000'000;
  for (int cycle = 0; cycle < 6 && !in.done(); ++cycle) {
    std::uint8_t step = in.next();
    now += step % 9 == 0 ? -600.0 : step * 3.0;  // clocks jump, both ways
    slurm.queue_error = in.next() % 5 == 0 ? "squeue: timed out after 30s" : "";
    slurm.jobs.clear();
    // A node Slurm drained for a failed launch, or none: what makes a held task relaunchable.
    slurm.node_list.clear();
    if (in.next() % 2)
      slurm.node_list.push_back({"node-1", "idle", {"DRAIN"}, "Prolog error", "root", {}, ""});
    for (int n = in.next() % 4; n > 0; --n) {
      SlurmJob j;
      j.job_id = 1 + in.next() % 3;  // the same id again: requeued
      j.name = in.pick(names);
      j.user = in.next() % 4 ? "trainer" : "mallory";
      j.state = in.pick(states);
      // Slurm's words for a task it holds after a failed launch (rules/launch_failure.h).
      if (in.next() % 6 == 0) j.reason_detail = "launch failed requeued held";
      j.nodes = in.pick(nodes);
      j.start_time = 1'800'000'000 + in.next() * 10;
      j.std_out = in.pick(logs);
      j.command = in.next() % 4 ? "/train.sh" : "";
      slurm.jobs.push_back(j);
    }
    std::string text = in.chunk(in.next() % 96);
    if (in.next() % 2) text += "\rglobal_step: " + std::to_string(in.next()) + "\n";
    write_file(logs[0], text, true);
    bool throws = in.next() % 7 == 0;
    slurm.on_show_job = [throws](const std::string&) {
      if (throws) throw std::runtime_error("scontrol printed half a record");
    };
    auto side_effects = slurm.cancelled.size() + slurm.submitted.size() + slurm.controls.size();
    CycleResult r;
    try {
      r = Supervisor(config, store, slurm).run_cycle(now);
    } catch (const std::exception& e) {
      return std::string("a cycle threw: ") + e.what();
    }
    std::map<std::string, Severity> severity;
    for (const auto& f : r.findings) severity[f.key] = f.severity;
    int journaled = 0;
    for (const auto& a : store.recent_actions(200)) {
      if (a.started != now) continue;
      std::string key = a.reason.substr(0, a.reason.find(": "));
      auto it = severity.find(key);
      if (it == severity.end()) return "action " + a.kind + " on no finding of this cycle: " + key;
      if (it->second == Severity::Unknown) return "action " + a.kind + " on an unknown: " + key;
      if (a.kind != "alert" && a.state != "skipped") ++journaled;
    }
    auto now_effects = slurm.cancelled.size() + slurm.submitted.size() + slurm.controls.size();
    if (now_effects - side_effects > static_cast<std::size_t>(journaled))
      return "a Slurm command ran that the journal does not hold";
    for (const auto& cmd : slurm.submitted)
      for (const auto& arg : cmd)
        if (arg.find("mallory") != std::string::npos) return "another user's job was resubmitted";
    auto heartbeat = nlohmann::json::parse(store.get("heartbeat").value_or(""), nullptr, false);
    if (!heartbeat.is_object() || heartbeat.value("ts", 0.0) != now)
      return "no heartbeat for the cycle";
    try {
      (void)build_status(config, store, now).dump();  // throws on invalid UTF-8
    } catch (const std::exception& e) {
      return std::string("status is not valid JSON: ") + e.what();
    }
  }
  return "";
}

}  // namespace llmwatch::testing

// What the nodes' health history costs a cycle at 16,384 managed nodes: every node's result file
// is looked at (cycle/checks/node_results.h), and every node whose node-check reported has its
// GPU telemetry series looked at (is the report new?) and, when it is, a sample added. Reports
// and series of 8 GPUs under load, as the real H200 reports them (clock-event counters, compute
// processes).
//
//   llmwatch_node_history_bench [--nodes N]   (prints two tables)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cycle/checks/node_history.h"
#include "cycle/checks/node_results.h"
#include "cycle/checks/straggler_judge.h"
#include "rules/gpu_telemetry_series.h"
#include "store/store.h"
#include "util/files.h"

using namespace llmwatch;

namespace {

TelemetrySample sample(double ts) {
  TelemetrySample s{ts, {}};
  for (int g = 0; g < 8; ++g) {
    GpuTelemetry t;
    t.gpu = g;
    t.sm_mhz = 1530;
    t.sm_max_mhz = 1980;
    t.power_w = 688.98;
    t.power_limit_w = 700;
    t.temp_c = 61;
    t.util_pct = 100;
    t.pcie_gen = t.pcie_gen_max = 5;
    t.pcie_width = t.pcie_width_max = 16;
    t.reasons = {"SW Power Cap"};
    t.processes = 1;
    t.sw_thermal_us = t.hw_thermal_us = t.hw_power_brake_us = 0;
    s.gpus.push_back(t);
  }
  return s;
}

template <typename F>
double micros_each(int n, F f) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f(i);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

}  // namespace

// Every node's result read by the cycle: the first look reads and parses every file, a steady
// cycle finds them as they were (settled: written over 2 s ago).
void node_results(int nodes) {
  char tmpl[] = "/tmp/llmwatch-node-history-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  NodeReport r;
  r.ts = 1000;
  r.sources = {"nvidia-smi", "nvlink"};
  r.telemetry = sample(1000).gpus;
  for (int g = 0; g < 8; ++g) r.gpus[g] = Verdict::Ok;
  std::size_t bytes = 0;
  for (int i = 0; i < nodes; ++i) {
    r.node = "gpu" + std::to_string(i);
    auto text = r.to_json() + "\n";
    bytes = text.size();
    (void)write_file_atomic(dir + "/" + r.node + ".json", text);
  }
  auto pass = [&](std::chrono::nanoseconds settle) {
    int read = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < nodes; ++i)
      read += read_node_result(dir, "gpu" + std::to_string(i), settle).has_value();
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(ms, read);
  };
  auto first = pass(std::chrono::nanoseconds(0));
  auto steady = pass(std::chrono::nanoseconds(0));
  auto fresh = pass(std::chrono::hours(1));  // as if every file had just been rewritten
  std::printf("| node results (%d nodes, %zu bytes each) | ms a cycle |\n|---|---|\n", nodes,
              bytes);
  std::printf("| every file read and parsed (the first cycle; before, every cycle) | %.0f (%d) |\n",
              first.first, first.second);
  std::printf("| a steady cycle: files as they were, by their stat | %.0f (%d) |\n", steady.first,
              steady.second);
  std::printf("| every file rewritten since the last look | %.0f (%d) |\n\n", fresh.first,
              fresh.second);
  std::filesystem::remove_all(dir);
}

// Every managed node's report recorded by the cycle (cycle/checks/node_history.h) in a real
// state store: the first look adds each node's sample; a steady cycle finds the same reports
// (checks every 5 minutes: most reports are as they were at a 30 s cycle); then every report new.
// `watched`: the nodes a watched task runs on (the others' telemetry need not be kept).
void history(int nodes, int watched) {
  char tmpl[] = "/tmp/llmwatch-node-history-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  NodeFacts facts;
  facts.now = 2000;
  WatchedTask task;
  task.label = "tr";
  task.task.nodes = "gpu[0-" + std::to_string(watched - 1) + "]";
  facts.running.push_back(task);
  facts.watched = watched_nodes(facts.running);
  for (int i = 0; i < nodes; ++i) {
    NodeReport& r = facts.reports["gpu" + std::to_string(i)];
    r.node = "gpu" + std::to_string(i);
    r.ts = 1990;
    r.telemetry = sample(1990).gpus;
    for (int g = 0; g < 8; ++g) r.gpus[g] = Verdict::Ok;
  }
  double first_ms = 0, steady_ms = 0, fresh_ms = 0;
  std::uintmax_t db_bytes = 0;
  {
    Store store(dir);
    auto timed = [&] {
      auto t0 = std::chrono::steady_clock::now();
      record_history(store, facts, Seconds(600));
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
          .count();
    };
    first_ms = timed();
    facts.now += 30;
    steady_ms = timed();
    for (auto& [node, r] : facts.reports) r.ts += 60;
    facts.now += 60;
    fresh_ms = timed();
    db_bytes = std::filesystem::file_size(Store::db_path(dir));
  }
  std::printf(
      "| node history (%d managed nodes reporting, %d of them in a watched task; a real state "
      "store) | ms a cycle |\n|---|---|\n",
      nodes, watched);
  std::printf("| the first reports (each node's first sample) | %.0f |\n", first_ms);
  std::printf("| a steady cycle: the same reports | %.0f |\n", steady_ms);
  std::printf("| every report new | %.0f |\n", fresh_ms);
  std::printf("| state file after these | %.1f MiB |\n\n", db_bytes / 1048576.0);
  std::filesystem::remove_all(dir);
}

// A standing slow-node finding's GPU evidence for one job of `nodes` nodes, as each cycle gives
// it while the finding stands: the suspect's and every peer's series read (in a transaction, as
// the judge reads them), and what they say worked out.
void standing_suspect(int nodes) {
  char tmpl[] = "/tmp/llmwatch-node-suspect-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  {
    Store store(dir);
    store.transaction([&] {
      for (int n = 0; n < nodes; ++n)
        for (int i = 0; i < Store::kTelemetryKept; ++i)
          store.add_telemetry_sample("gpu" + std::to_string(n), sample(1000.0 + 60 * i));
    });
    // The cycle's own call (cycle/checks/straggler_judge.h), its slow window the last 8 samples.
    StragglerVerdict verdict;
    verdict.nodes.resize(1);
    NodeSpeed& suspect = verdict.nodes[0];
    suspect.node = "gpu0";
    suspect.suspect = true;
    suspect.window_s = 60 * 8;
    for (int n = 1; n < nodes; ++n) verdict.more.push_back("gpu" + std::to_string(n));
    const double now = 1000.0 + 60 * Store::kTelemetryKept;
    auto evidence = [&] { return gpu_evidence(store, verdict, suspect, now); };
    (void)evidence();  // the finding's first cycle
    const int n = 20;
    double cycle = micros_each(n, [&](int) { (void)evidence(); });
    // Every node's series parsed again (a new sample each, or another writer's commit).
    double again = micros_each(n, [&](int i) {
      store.transaction([&] {
        for (int k = 0; k < nodes; ++k)
          store.add_telemetry_sample("gpu" + std::to_string(k), sample(2000.0 + i));
      });
      (void)evidence();
    });
    std::printf(
        "| a standing slow-node finding's GPU evidence (%d-node job, %d samples x 8 GPUs each) | "
        "ms a cycle |\n|---|---|\n",
        nodes, Store::kTelemetryKept);
    std::printf("| the series as they were (kept parsed) | %.2f |\n", cycle / 1000);
    std::printf("| every node's series with a new sample (added, then judged) | %.2f |\n\n",
                again / 1000);
  }
  std::filesystem::remove_all(dir);
}

int main(int argc, char** argv) {
  int nodes = 16384;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--nodes") == 0) nodes = std::atoi(argv[i + 1]);
  standing_suspect(64);
  node_results(nodes);
  history(nodes, nodes / 16);
  history(nodes, nodes);
  // One node's series in a real store, as a cycle touches it (in a transaction): a report
  // already kept, a new sample added (the oldest dropped), and the series read whole.
  char tmpl[] = "/tmp/llmwatch-node-series-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  {
    Store store(dir);
    for (int i = 0; i < Store::kTelemetryKept; ++i)
      store.add_telemetry_sample("gpu1", sample(1000.0 + 60 * i));
    const int n = 2000;
    double look = 0, add = 0, read = 0;
    store.transaction([&] {
      look = micros_each(n, [&](int) { store.add_telemetry_sample("gpu1", sample(1000)); });
      add = micros_each(n, [&](int i) { store.add_telemetry_sample("gpu1", sample(5000.0 + i)); });
      read = micros_each(n, [&](int) { (void)store.telemetry_series("gpu1"); });
    });
    std::printf(
        "| a node's telemetry series (%d samples x 8 GPUs, a row a sample) | us each | at 16,384 "
        "nodes |\n|---|---|---|\n",
        Store::kTelemetryKept);
    std::printf("| a report already kept | %.1f | %.0f ms |\n", look, look * 16384 / 1000);
    std::printf("| a new sample added | %.1f | %.0f ms |\n", add, add * 16384 / 1000);
    std::printf("| the series read whole (a slow node's evidence) | %.1f | |\n", read);
  }
  std::filesystem::remove_all(dir);
}

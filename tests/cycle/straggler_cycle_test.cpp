// The slow node through whole cycles of the real Supervisor (#28): the ranks' timing files
// name node-3; "alert" touches nothing and says what evicting would save; "evict" cancels,
// restarts without node-3, drains it with the reason and charges the ledger, only when the
// cost sum says it pays.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "ending_run.h"
#include "probes/megatron_rank_times.h"
#include "rank_timing_sim.h"
#include "rules/gpu_telemetry_series.h"
#include "rules/straggler.h"
#include "store/keys.h"
#include "store_reading.h"

namespace llmwatch {
namespace {

using testing::EndingRun;
using testing::event_lines;
using testing::TimingSim;
using testing::write_file;

// Writes the simulated ranks' files, the way llmwatch_timing.py does.
void write_timing(const std::string& dir, const std::vector<RankSeries>& ranks) {
  std::filesystem::create_directories(dir);
  for (const auto& r : ranks) {
    std::string text;
    for (const auto& s : r.samples)
      text += "{\"ts\":" + std::to_string(s.ts) + ",\"rank\":" + std::to_string(r.rank) +
              ",\"host\":\"" + r.host + "\",\"step\":" + std::to_string(s.step) +
              ",\"compute_s\":" + std::to_string(s.compute_s) + ",\"wait_s\":0.05}\n";
    write_file(dir + "/rank-" + std::to_string(r.rank) + ".jsonl", text);
  }
}

// The ranks of a 3-node job (8 ranks a node), node-3 computing at `slow_speed`; the same each call.
std::vector<RankSeries> slow_ranks(double slow_speed, int nodes = 3) {
  std::mt19937 rng(3);
  TimingSim sim;
  sim.nodes = nodes;
  sim.slow_node = "node-3";
  sim.slow_speed = slow_speed;
  return sim.run(rng);
}

// `n` cycles 30 s apart of the task running and stepping, on `nodes`.
CycleResult stepping_cycles(EndingRun& run, int n, const std::string& nodes = "node-[1-3]") {
  run.idle_nodes(6);
  run.slurm.jobs = {run.task("RUNNING")};
  run.slurm.jobs[0].nodes = nodes;
  CycleResult r;
  for (int i = 0; i < n; ++i) {
    write_file(run.log, "global_step: " + std::to_string(100 + i * 10) + "\n", i > 0);
    r = run.cycle(run.now + i * 30);
  }
  return r;
}

// Four cycles of a run that steps (max_steps known), node-3 computing at `slow_speed`.
CycleResult slow_run(EndingRun& run, const std::string& timing, double slow_speed) {
  write_timing(timing, slow_ranks(slow_speed));
  run.slurm.shown_nodes["node-3"] = {{"State", "ALLOCATED"}, {"Reason", ""}};
  return stepping_cycles(run, 4);
}

std::string config_for(const std::string& timing, const std::string& mode) {
  return "timing_dir = \"" + timing + "\"\nmax_steps = 1000000\non_straggler = \"" + mode +
         "\"\nevict_after = \"1s\"\n";
}

TEST(StragglerCycle, AlertNamesTheNodeWithTheCostSumAndTouchesNothing) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "alert"));
  auto r = slow_run(run, t / "timing", 0.7);
  const Finding* f = run.finding(r, "straggler");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_NE(f->summary.find("slow node node-3: 0."), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("ranks 16-23"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("evict: saves ≈ "), std::string::npos)
      << "the alert states the cost sum: " << f->summary;
  EXPECT_TRUE(run.slurm.cancelled.empty());
  EXPECT_TRUE(run.slurm.submitted.empty());
  EXPECT_TRUE(run.slurm.controls.empty()) << run.slurm.controls.front();
  for (const char* healthy : {"node-1", "node-2"})
    EXPECT_EQ(f->summary.find(healthy), std::string::npos) << f->summary;
}

TEST(StragglerCycle, EvictCancelsRestartsWithoutTheNodeDrainsItAndChargesTheLedger) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "evict"));
  slow_run(run, t / "timing", 0.7);
  EXPECT_EQ(run.slurm.cancelled.size(), 1u) << event_lines(*run.store);
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--exclude=node-3"), std::string::npos) << run.submitted();
  EXPECT_NE(std::find(run.slurm.controls.begin(), run.slurm.controls.end(), "update node-3 drain"),
            run.slurm.controls.end())
      << event_lines(*run.store);
  EXPECT_EQ(run.store->incident_counts(0)["node-3"], 1);
  EXPECT_NE(event_lines(*run.store).find("evict: saves"), std::string::npos)
      << "the history shows the cost sum\n"
      << event_lines(*run.store);
}

// The timing is the job's own writing: a node it names that is not in the job's allocation
// (another job's node, or a name the trainer's host gave that is not Slurm's) is never evicted,
// drained or charged. The job's timing is then unknown, and the finding says which names.
TEST(StragglerCycle, ANodeTheTimingNamesOutsideTheJobIsNeverTouched) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "evict"));
  auto ranks = slow_ranks(0.7);
  for (auto& r : ranks)
    if (r.host == "node-3") r.host = "node-9";  // the task runs on node-[1-3]
  write_timing(t / "timing", ranks);
  run.slurm.shown_nodes["node-9"] = {{"State", "ALLOCATED"}, {"Reason", ""}};
  auto r = stepping_cycles(run, 4);
  EXPECT_TRUE(run.slurm.cancelled.empty()) << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.submitted.empty()) << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.controls.empty()) << event_lines(*run.store);
  EXPECT_EQ(run.store->incident_counts(0)["node-9"], 0);
  EXPECT_FALSE(run.finding(r, "straggler"));
  const Finding* f = run.finding(r, "timing-unreadable");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_EQ(f->severity, Severity::Unknown);
  std::string evidence;
  for (const auto& line : f->evidence) evidence += line + "\n";
  EXPECT_NE(evidence.find("node-9"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("node-[1-3]"), std::string::npos) << evidence;
}

// Each rewritten summary is held against the task's nodes: one naming node-9 in node-3's place,
// after one of the task's own nodes was judged, is unknown and nothing is done on it; the next
// of the task's own nodes is judged again. (A rewrite naming the same hosts as the summary
// before is not looked up name by name again: straggler_judge.cpp.)
TEST(StragglerCycle, ARewriteNamingAnotherNodeIsUnknownAfterOneThatNamedOnlyTheTasks) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "alert"));
  std::filesystem::create_directories(t / "timing");
  int step = 100;
  auto cycle_after_rewrite = [&](const std::string& in_place_of_node3, double at) {
    auto ranks = slow_ranks(0.7);
    for (auto& r : ranks)
      if (r.host == "node-3") r.host = in_place_of_node3;
    write_file(t / "timing/summary.json.tmp",
               testing::summary_json_v2(rank_windows(ranks), at - 5, 30, 59, 6));
    std::filesystem::rename(t / "timing/summary.json.tmp", t / "timing/summary.json");
    write_file(run.log, "global_step: " + std::to_string(step += 10) + "\n", true);
    return run.cycle(at);
  };
  run.idle_nodes(6);
  run.slurm.jobs = {run.task("RUNNING")};
  run.slurm.jobs[0].nodes = "node-[1-3]";
  run.slurm.shown_nodes["node-9"] = {{"State", "ALLOCATED"}, {"Reason", ""}};
  cycle_after_rewrite("node-3", run.now);
  auto r = cycle_after_rewrite("node-3", run.now + 30);
  ASSERT_TRUE(run.finding(r, "straggler")) << event_lines(*run.store);
  r = cycle_after_rewrite("node-9", run.now + 60);
  EXPECT_FALSE(run.finding(r, "straggler"));
  const Finding* f = run.finding(r, "timing-unreadable");
  ASSERT_TRUE(f) << event_lines(*run.store);
  std::string evidence;
  for (const auto& line : f->evidence) evidence += line + "\n";
  EXPECT_NE(evidence.find("node-9"), std::string::npos) << evidence;
  EXPECT_EQ(run.store->incident_counts(0)["node-9"], 0);
  r = cycle_after_rewrite("node-3", run.now + 90);
  EXPECT_FALSE(run.finding(r, "timing-unreadable")) << event_lines(*run.store);
  EXPECT_TRUE(run.finding(r, "straggler")) << event_lines(*run.store);
}

// The GPUs' own telemetry (their node-checks' series) says why: node-3's GPU 2 is held back by
// HW Slowdown while the other nodes' GPUs run at full clock. The finding, its evidence and the
// drain reason say so; the healthy nodes' GPUs are named nowhere.
// node-3's GPU 2 held back by HW Slowdown over the last minutes, the other GPUs at full clock,
// as their node-checks' series.
void node3_gpu2_throttled(EndingRun& run) {
  for (const char* node : {"node-1", "node-2", "node-3"}) {
    for (int i = 0; i < 4; ++i) {
      TelemetrySample s{run.now - 200 + 60 * i, {}};
      for (int g = 0; g < 8; ++g) {
        GpuTelemetry gpu;
        gpu.gpu = g;
        gpu.sm_max_mhz = 1980;
        bool held = std::string(node) == "node-3" && g == 2;
        gpu.sm_mhz = held ? 1095 : 1980;
        if (held) gpu.reasons = {"HW Slowdown"};
        s.gpus.push_back(gpu);
      }
      run.store->add_telemetry_sample(node, s);
    }
  }
}

TEST(StragglerCycle, TheSlowNodesGpuTelemetryIsItsEvidenceAndItsDrainReason) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "evict"));
  node3_gpu2_throttled(run);
  // And its idle GEMM check came out far under the fleet's (a finding already open).
  Finding fleet = make_finding("node:node-3", "node-3", "fleet-slow", Severity::Warning,
                               "node-3: gemm/gflops 350, 0.70× the fleet median 500 (6 nodes)");
  run.store->observe(fleet, run.now - 600);
  auto r = slow_run(run, t / "timing", 0.7);
  const Finding* f = run.finding(r, "straggler");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("; GPU 2 HW Slowdown, SM clock 1095/1980 MHz"), std::string::npos)
      << f->summary;
  std::string evidence;
  for (const auto& e : f->evidence) evidence += e + "\n";
  EXPECT_NE(evidence.find("node-3 GPU 2: HW Slowdown; SM clock 1095/1980 MHz"), std::string::npos)
      << evidence;
  EXPECT_EQ(evidence.find("node-1 GPU"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("node-3: gemm/gflops 350, 0.70× the fleet median"), std::string::npos)
      << "the fleet's word on the node is evidence too\n"
      << evidence;
  EXPECT_NE(run.slurm.node_reasons["node-3"].find("GPU 2 HW Slowdown"), std::string::npos)
      << run.slurm.node_reasons["node-3"];
}

// Without telemetry the finding says the GPUs were not looked at, and names no GPU cause.
TEST(StragglerCycle, WithoutTelemetryTheFindingSaysSo) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "alert"));
  auto r = slow_run(run, t / "timing", 0.7);
  const Finding* f = run.finding(r, "straggler");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_EQ(f->summary.find("GPU "), std::string::npos) << f->summary;
  bool said = false;
  for (const auto& e : f->evidence) said |= e.find("node-3: no GPU telemetry") != std::string::npos;
  EXPECT_TRUE(said);
}

// Evict configured and paying, but the node has not stayed slow for evict_after (10 min by
// default): only told. A short fail-slow ends by itself.
TEST(StragglerCycle, EvictWaitsUntilTheNodeStayedSlowForEvictAfter) {
  testing::TempDir t;
  EndingRun run("timing_dir = \"" + t / "timing" +
                "\"\nmax_steps = 1000000\non_straggler = \"evict\"\n");
  auto r = slow_run(run, t / "timing", 0.7);
  ASSERT_TRUE(run.finding(r, "straggler")) << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.cancelled.empty()) << event_lines(*run.store);
  run.slurm.jobs = {run.task("RUNNING")};
  write_file(run.log, "global_step: 200\n", true);
  // Ten minutes on, the ranks still write, and node-3 is still slow.
  auto later = slow_ranks(0.7);
  for (auto& rank : later)
    for (auto& sample : rank.samples) sample.ts += 700;
  write_timing(t / "timing", later);
  run.cycle(run.now + 700);
  EXPECT_EQ(run.slurm.cancelled.size(), 1u) << "evicted once it stayed slow for 10 min\n"
                                            << event_lines(*run.store);
}

// Evict configured, but the run has little left: the saving does not pay the restart.
TEST(StragglerCycle, EvictWaitsForTheCostSumToPay) {
  testing::TempDir t;
  EndingRun run("timing_dir = \"" + t / "timing" +
                "\"\nmax_steps = 135\non_straggler = \"evict\"\nevict_after = \"1s\"\n");
  auto r = slow_run(run, t / "timing", 0.8);
  ASSERT_TRUE(run.finding(r, "straggler")) << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.cancelled.empty()) << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.controls.empty());
  EXPECT_NE(run.finding(r, "straggler")->summary.find("keep: saves"), std::string::npos)
      << run.finding(r, "straggler")->summary;
}

// A rank 0 summary (the helper's summary mode) of 3 nodes, node-3 computing at 0.7x, written
// at `ts`: a row a node, as the helper writes it, or a column a rank, as it wrote it before.
std::string summary_at(double ts, int nodes = 3, bool rows = true) {
  RankWindows windows = rank_windows(slow_ranks(0.7, nodes));
  return rows ? testing::summary_json_v2(windows, ts, 30, 59, 6)
              : testing::summary_json(windows, ts);
}

// Two cycles of a stepping run whose timing directory holds a summary written at `ts`.
CycleResult summary_run(EndingRun& run, const std::string& timing, double ts, bool rows) {
  std::filesystem::create_directories(timing);
  write_file(timing + "/summary.json", summary_at(ts, 3, rows));
  return stepping_cycles(run, 2);
}

// A large job's rank 0 writes one summary for all ranks: the cycle judges it as it judges the
// rank files, in either of the helper's forms; one left by a task before this one is not judged.
TEST(StragglerCycle, ARankZeroSummaryNamesTheNodeAndOneFromAnEarlierTaskDoesNot) {
  for (bool rows : {true, false})
    for (bool earlier : {false, true}) {
      SCOPED_TRACE(rows ? "a row a node" : "a column a rank");
      testing::TempDir t;
      EndingRun run(config_for(t / "timing", "alert"));
      const double started = static_cast<double>(run.task("RUNNING").start_time);
      auto r = summary_run(run, t / "timing", earlier ? started - 600 : run.now - 10, rows);
      const Finding* f = run.finding(r, "straggler");
      if (earlier) {
        EXPECT_FALSE(f) << "a summary from before the task started: " << f->summary;
        continue;
      }
      ASSERT_TRUE(f) << event_lines(*run.store);
      EXPECT_NE(f->summary.find("slow node node-3: 0."), std::string::npos) << f->summary;
      EXPECT_NE(f->summary.find("ranks 16-23"), std::string::npos) << f->summary;
      EXPECT_TRUE(run.slurm.cancelled.empty());
    }
}

// A job of 12 nodes: the finding shows its 8 slowest, the suspect first, and says how many more
// there are (every node of every job would be 64,000 series at 1,000 jobs of 64 nodes). The view
// and the metrics show only those slower than healthy jitter (under 0.95x their peers), the
// suspect first, and how many nodes were judged: the 8 slowest of healthy nodes are a new draw
// at each rewrite, which rewrote the view and changed the gauge's series each time.
TEST(StragglerCycle, TheViewShowsTheNodesSlowerThanJitterAndTheFindingTheSlowestEight) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "alert"));
  std::filesystem::create_directories(t / "timing");
  RankWindows windows;
  for (int node = 1; node <= 12; ++node) {
    windows.hosts.push_back("node-" + std::to_string(node));
    // node-3 at 0.7x, node-5 at 0.92x, node-7 at 0.97x (within jitter), the rest about 1x.
    const double speed = node == 3 ? 0.7 : node == 5 ? 0.92 : node == 7 ? 0.97 : 1;
    for (int r = 0; r < 8; ++r) {
      RankWindow w;
      w.rank = (node - 1) * 8 + r;
      w.host = static_cast<std::uint32_t>(node - 1);
      w.now = 0.4 / speed * (1 + 0.001 * ((w.rank * 7) % 5));
      w.best = 0.4;
      w.window_s = 30;
      windows.ranks.push_back(w);
    }
  }
  write_file(t / "timing/summary.json", testing::summary_json_v2(windows, run.now - 10, 30, 59, 6));
  auto r = stepping_cycles(run, 2, "node-[1-12]");
  const Finding* f = run.finding(r, "straggler");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("slow node node-3"), std::string::npos) << f->summary;
  std::string evidence;
  for (const auto& line : f->evidence) evidence += line + "\n";
  EXPECT_NE(evidence.find("and 4 more nodes"), std::string::npos) << evidence;
  auto view = nlohmann::json::parse(run.store->get(kv::job_view("tr")).value_or("{}"));
  ASSERT_EQ(view["node_speeds"].size(), 2u) << view.dump();
  EXPECT_EQ(view["node_speeds"][0]["node"], "node-3");
  EXPECT_EQ(view["node_speeds"][0]["suspect"], true);
  EXPECT_EQ(view["node_speeds"][1]["node"], "node-5");
  EXPECT_EQ(view["node_speeds"][1]["suspect"], false);
  EXPECT_EQ(view["nodes_judged"], 12) << view.dump();
}

// Timing that stopped being written (rank 0's disk filled, its helper was switched off) says
// nothing of the node now: a node slow 15 minutes ago is neither named nor evicted on it.
TEST(StragglerCycle, TimingNotWrittenForTenMinutesIsNotJudged) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "evict"));
  auto r = summary_run(run, t / "timing", run.now - 900, true);
  EXPECT_FALSE(run.finding(r, "straggler")) << run.finding(r, "straggler")->summary;
  EXPECT_TRUE(run.slurm.cancelled.empty()) << "evicted on a summary 15 minutes old";
  EXPECT_TRUE(run.slurm.controls.empty()) << run.slurm.controls.front();
}

// Not judging is said, not silent: an operator whose helper stopped writing (or whose node's
// clock is 15 minutes behind llmwatch's) sees that slow-node judging is off for the run. Info:
// it neither alerts nor acts, and it clears once the timing is fresh again.
TEST(StragglerCycle, TimingNotJudgedForItsAgeIsSaidAndClearsWhenFresh) {
  testing::TempDir t;
  EndingRun run(config_for(t / "timing", "evict"));
  auto r = summary_run(run, t / "timing", run.now - 900, true);
  const Finding* f = run.finding(r, "timing-stale");
  ASSERT_TRUE(f) << "nothing said that the run's nodes are no longer judged";
  EXPECT_EQ(f->severity, Severity::Info);
  EXPECT_NE(f->summary.find("last written 15m30s ago"), std::string::npos) << f->summary;
  EXPECT_NE(f->evidence.front().find("clock"), std::string::npos) << f->evidence.front();
  EXPECT_TRUE(run.slurm.cancelled.empty());
  // Fresh timing again, ten minutes on: judged, and the staleness is gone.
  run.now += 600;
  auto fresh = summary_run(run, t / "timing", run.now - 10, true);
  EXPECT_FALSE(run.finding(fresh, "timing-stale"));
  EXPECT_TRUE(run.finding(fresh, "straggler"));
}

// Megatron's log intervals from `first` on: the iteration line, then every rank's timers
// (--timing-log-option all --timing-log-level 2); 12 ranks on node-[1-3], node-3's (8-11)
// computing at `slow_speed`, with ±2 % jitter.
std::string megatron_intervals(int first, int count, double slow_speed) {
  std::mt19937 rng(static_cast<unsigned>(first));
  std::uniform_real_distribution<double> jitter(0.98, 1.02);
  std::string out;
  for (int it = first; it < first + count; ++it) {
    out += " iteration " + std::to_string(it * 10) +
           "/ 500000 | consumed samples: 5120 | elapsed time per iteration (ms): 1890.4 |\n";
    out += "times across ranks (ms):\n";
    for (const char* name : {"forward-backward", "forward-compute", "backward-compute"}) {
      out += std::string("  ") + name + ":\n";
      for (int r = 0; r < 12; ++r) {
        double ms = std::string(name) == "forward-backward" ? 1850 : 600;
        if (r >= 8 && std::string(name) != "forward-backward") ms /= slow_speed;
        out += "     rank " + std::to_string(r) + ": " + std::to_string(ms * jitter(rng)) + "\n";
      }
    }
  }
  return out;
}

// Two cycles of a Megatron run on node-[1-3]: the first reads 7 log intervals, the second one
// more (each block ends with the next iteration's line).
CycleResult megatron_run(EndingRun& run) {
  run.idle_nodes(6);
  run.slurm.jobs = {run.task("RUNNING")};
  write_file(run.log, megatron_intervals(1, 7, 0.7));
  run.cycle(run.now);
  write_file(run.log, megatron_intervals(8, 1, 0.7), true);
  return run.cycle(run.now + 30);
}

// A Megatron run that prints every rank's timers (timing_from_log, no helper): its slow node
// is named with its ranks, as from the helper's files; the same log without the key is not
// judged.
TEST(StragglerCycle, MegatronsPerRankTimersInTheLogNameTheSlowNode) {
  for (bool from_log : {true, false}) {
    EndingRun run(std::string(from_log ? "timing_from_log = true\n" : "") +
                  "max_steps = 1000000\n");
    auto r = megatron_run(run);
    const Finding* f = run.finding(r, "straggler");
    if (!from_log) {
      EXPECT_FALSE(f) << f->summary;
      continue;
    }
    ASSERT_TRUE(f) << event_lines(*run.store);
    EXPECT_NE(f->summary.find("slow node node-3: 0.6"), std::string::npos) << f->summary;
    EXPECT_NE(f->summary.find("ranks 8-11"), std::string::npos) << f->summary;
    // A cycle with no new interval keeps the verdict (not judged again) and still names it.
    auto same = run.cycle(run.now + 60);
    ASSERT_TRUE(run.finding(same, "straggler"));
    auto headline = [](const std::string& text) { return text.substr(0, text.find(';')); };
    EXPECT_EQ(headline(run.finding(same, "straggler")->summary), headline(f->summary));
  }
}

// llmwatch as the self-perpetuating job runs it: `run --once`, a new process each cycle, and a
// read that ends in the middle of a block. The timers are kept in the store between the cycles:
// the slow node is named from blocks no single cycle read whole.
// Seven Megatron intervals (node-3 at 0.7x) read in three parts, cut inside the blocks of
// iterations 30 and 60, by a run of "tr" that is RUNNING.
struct CutMegatronLog {
  EndingRun run{"timing_from_log = true\nmax_steps = 1000000\n"};
  std::string text = megatron_intervals(1, 7, 0.7);
  std::size_t cut = text.find("backward-compute", text.find("iteration 30"));
  std::size_t cut2 = text.find("backward-compute", text.find("iteration 60"));
  std::vector<std::string> reads = {text.substr(0, cut), text.substr(cut, cut2 - cut),
                                    text.substr(cut2)};
  CutMegatronLog() {
    run.idle_nodes(6);
    run.slurm.jobs = {run.task("RUNNING")};
  }
};

TEST(StragglerCycle, MegatronTimersAreKeptAcrossProcessesAndCutBlocks) {
  CutMegatronLog log;
  EndingRun& run = log.run;
  const auto& reads = log.reads;
  CycleResult r;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    write_file(run.log, reads[i], i > 0);
    take_log_rank_times("tr");  // what this process held is gone: the next cycle is another
    r = run.cycle(run.now + 30 * static_cast<double>(i));
  }
  write_file(run.log, megatron_intervals(8, 1, 0.7), true);
  take_log_rank_times("tr");
  r = run.cycle(run.now + 90);
  const Finding* f = run.finding(r, "straggler");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("ranks 8-11"), std::string::npos) << f->summary;
}

// The daemon holds the timers between its cycles, and saves them only for its own restart: at
// most every Store::kColdEvery, not at every move (a 512-rank record is 216 KiB, and was
// written every cycle). A daemon restarted from a record older than its log's cursor forgets
// the block that record had cut: its first half would otherwise be joined to the second half of
// a block read after the restart.
TEST(StragglerCycle, MegatronTimersAreSavedForARestartNotEveryCycle) {
  CutMegatronLog log;
  EndingRun& run = log.run;
  const std::string& text = log.text;
  const std::size_t cut = log.cut, cut2 = log.cut2;
  auto stored = [&] { return run.store->get(kv::megatron_timers("tr")).value_or(""); };
  write_file(run.log, text.substr(0, cut));
  run.cycle(run.now);
  const std::string first = stored();
  ASSERT_FALSE(first.empty());
  write_file(run.log, text.substr(cut, cut2 - cut), true);
  run.cycle(run.now + 30);
  EXPECT_EQ(stored(), first) << "saved again 30 s later";
  // The daemon restarts: only the record saved at the first cycle is left.
  take_log_rank_times("tr");
  const auto saved = LogRankTimes::from_json(first);
  ASSERT_TRUE(saved);
  write_file(run.log, text.substr(cut2), true);
  run.cycle(run.now + 60);
  // What the rest of the log holds whole, read from where the log's cursor is.
  LogRankTimes fresh;
  for (std::size_t at = cut2, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    fresh.feed(std::string_view(text).substr(at, end - at));
  }
  fresh.keep_taken(0);
  auto held = take_log_rank_times("tr");
  ASSERT_TRUE(held);
  EXPECT_EQ(held->blocks.size(), saved->blocks.size() + fresh.blocks.size())
      << "a block cut before the restart was joined to one read after it";
  put_log_rank_times("tr", held);
  // Five minutes after its last save, a move is saved again.
  write_file(run.log, megatron_intervals(8, 1, 0.7), true);
  run.cycle(run.now + 60 + Store::kColdEvery);
  EXPECT_NE(stored(), first);
}

// `run --once` again, with each rank's own lines: a cycle that reads no rank line (a save's
// lines only) leaves the steps still open as they were, but moves the log's cursor. The record
// is saved with it: else the next process, seeing a record older than the cursor, would drop
// those open steps, and a step whose first ranks were read before would never be whole.
TEST(StragglerCycle, OpenStepsSurviveACycleThatReadsNoRankLine) {
  EndingRun run("timing_from_log = true\nmax_steps = 1000000\n");
  run.idle_nodes(6);
  run.slurm.jobs = {run.task("RUNNING")};
  auto ranks = [](int step, std::vector<int> which) {
    std::string out;
    for (int r : which)
      out += "[rank" + std::to_string(r) + "]: step " + std::to_string(step) + " compute 0.5 s\n";
    return out;
  };
  const std::vector<std::string> reads = {
      ranks(1, {0, 1, 2, 3, 4, 5}) + ranks(2, {0, 1, 2}) + "global_step: 2\n",
      "[NeMo I 2026-11-26 03:00:00 nemo_logging:393] Saving checkpoint at step 2\n",
      ranks(2, {3, 4, 5}) + ranks(3, {0}) + "global_step: 3\n"};
  for (std::size_t i = 0; i < reads.size(); ++i) {
    write_file(run.log, reads[i], i > 0);
    take_log_rank_times("tr");  // a new process each cycle
    run.cycle(run.now + 30 * static_cast<double>(i));
  }
  auto held = take_log_rank_times("tr");
  ASSERT_TRUE(held);
  ASSERT_EQ(held->blocks.size(), 2u) << held->to_json();
  EXPECT_EQ(held->blocks.back().second.seq, 2);
  EXPECT_EQ(held->blocks.back().second.compute_s.size(), 6u) << held->to_json();
}

// "evict" on a node whose ranks were placed by layout: only with its GPUs as a second
// witness. Without telemetry the cost sum is told and nothing is touched (a cyclic layout
// would drain a healthy node); with node-3's GPU held back, it is evicted.
TEST(StragglerCycle, ANodePlacedByLayoutIsEvictedOnlyWhenItsGpusBackIt) {
  for (bool telemetry : {false, true}) {
    EndingRun run(
        "timing_from_log = true\nmax_steps = 1000000\non_straggler = \"evict\"\n"
        "evict_after = \"1s\"\n");
    if (telemetry) node3_gpu2_throttled(run);
    auto r = megatron_run(run);
    if (telemetry) {
      EXPECT_EQ(run.slurm.cancelled.size(), 1u) << event_lines(*run.store);
      EXPECT_NE(run.submitted().find("--exclude=node-3"), std::string::npos) << run.submitted();
      continue;
    }
    const Finding* f = run.finding(r, "straggler");
    ASSERT_TRUE(f) << event_lines(*run.store);
    EXPECT_NE(f->summary.find("keep: saves"), std::string::npos) << f->summary;
    EXPECT_NE(f->summary.find("placed by layout"), std::string::npos) << f->summary;
    EXPECT_TRUE(run.slurm.cancelled.empty()) << event_lines(*run.store);
    EXPECT_TRUE(run.slurm.controls.empty()) << run.slurm.controls.front();
  }
}

// A Megatron world that does not divide over the task's nodes: no rank is placed on a node by
// guess; the timing is unknown, with the reason.
TEST(StragglerCycle, MegatronTimersThatDoNotFitTheNodesAreUnknownNotGuessed) {
  EndingRun run("timing_from_log = true\nmax_steps = 1000000\n");
  run.slurm.jobs = {run.task("RUNNING")};
  auto task = run.task("RUNNING");
  task.nodes = "node-[1-5]";
  task.node_count = 5;
  run.slurm.jobs = {task};
  write_file(run.log, megatron_intervals(1, 7, 0.7));
  auto r = run.cycle(run.now);
  EXPECT_FALSE(run.finding(r, "straggler"));
  const Finding* f = run.finding(r, "timing-unreadable");
  ASSERT_TRUE(f);
  EXPECT_NE(f->evidence.front().find("12 ranks over 5 nodes"), std::string::npos)
      << f->evidence.front();
}

// The timing directory cannot be read: unknown, and nothing is done about it but saying so.
TEST(StragglerCycle, UnreadableTimingIsUnknownAndNeverActs) {
  testing::TempDir t;
  EndingRun run(config_for(t / "no-such-dir", "evict"));
  run.slurm.jobs = {run.task("RUNNING")};
  write_file(run.log, "global_step: 1\n");
  auto r = run.cycle(run.now);
  const Finding* f = run.finding(r, "timing-unreadable");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Unknown);
  EXPECT_TRUE(run.slurm.cancelled.empty());
}

}  // namespace
}  // namespace llmwatch

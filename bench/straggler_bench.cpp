// make bench (#28): what slow-node localisation costs a cycle, and how soon it names a node.
//   - CPU per cycle to read and judge per-rank timing: 100 jobs × 512 ranks (64 nodes × 8),
//     each file read to its last 6 KiB, read from the page cache; ×10 for 1,000 jobs;
//   - latency from a node turning 0.8× slow to the finding, at 10 s steps and a 30 s tick.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "policy/eviction_cost.h"
#include "probes/megatron_rank_times.h"
#include "rank_timing_sim.h"
#include "rules/straggler.h"

using namespace llmwatch;

static long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

static double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// 1,000 jobs' rank 0 summaries, each in its own directory: a cycle in which every rank 0 has
// written `first` (read, parsed, judged), then one in which none has rewritten it (read and
// compared only: the parse and the verdict are kept while the text is the same), then the steady
// state: every one rewritten to `rewritten` since the last cycle (by rename, as the helper
// writes, outside the measured loop), with the memo already holding each directory.
struct SummaryCost {
  std::size_t bytes = 0;
  double per_first = 0, per_unchanged = 0, per_rewritten = 0;  // CPU seconds a job
  long kept_mib = 0;  // what the kept summaries hold (their windows, each text's size and hash)
  int suspects = 0, unchanged = 0;
};

SummaryCost summary_cost(const std::filesystem::path& dir, const std::string& first,
                         const std::string& rewritten) {
  const int jobs = 1000;
  StragglerSettings as_the_cycle;  // which keeps whole only the nodes its views show
  as_the_cycle.keep = 8;
  SummaryCost out;
  out.bytes = first.size();
  std::filesystem::create_directories(dir);
  for (int j = 0; j < jobs; ++j) {
    std::filesystem::create_directories(dir / std::to_string(j));
    std::ofstream(dir / std::to_string(j) / "summary.json") << first;
  }
  const long rss_before = peak_rss_kib();
  std::vector<std::shared_ptr<const RankWindows>> seen(jobs);
  double c0 = cpu_seconds();
  for (int j = 0; j < jobs; ++j) {
    seen[j] = read_rank_timing((dir / std::to_string(j)).string()).windows;
    out.suspects += judge_nodes(*seen[j], as_the_cycle).suspect() != nullptr;
  }
  out.per_first = (cpu_seconds() - c0) / jobs;
  c0 = cpu_seconds();
  for (int j = 0; j < jobs; ++j)
    out.unchanged += read_rank_timing((dir / std::to_string(j)).string()).windows == seen[j];
  out.per_unchanged = (cpu_seconds() - c0) / jobs;
  for (int j = 0; j < jobs; ++j) {
    auto to = dir / std::to_string(j) / "summary.json";
    std::ofstream(to.string() + ".tmp") << rewritten;
    std::filesystem::rename(to.string() + ".tmp", to);
  }
  c0 = cpu_seconds();
  for (int j = 0; j < jobs; ++j) {
    seen[j] = read_rank_timing((dir / std::to_string(j)).string()).windows;
    out.suspects += judge_nodes(*seen[j], as_the_cycle).suspect() != nullptr;
  }
  out.per_rewritten = (cpu_seconds() - c0) / jobs;
  out.kept_mib = (peak_rss_kib() - rss_before) / 1024;
  std::filesystem::remove_all(dir);
  return out;
}

int main() {
  std::mt19937 rng(28);
  auto dir = std::filesystem::temp_directory_path() / "llmwatch-straggler-bench";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  testing::TimingSim sim;
  sim.nodes = 64;
  sim.steps = 160;
  for (const auto& r : sim.run(rng)) {
    std::ofstream out(dir / ("rank-" + std::to_string(r.rank) + ".jsonl"));
    for (const auto& s : r.samples)
      out << "{\"v\":1,\"ts\":" << s.ts << ",\"rank\":" << r.rank << ",\"host\":\"" << r.host
          << "\",\"step\":" << s.step << ",\"compute_s\":" << s.compute_s
          << ",\"wait_s\":" << s.wait_s << "}\n";
  }
  const int jobs = 100;
  double c0 = cpu_seconds();
  int suspects = 0;
  for (int j = 0; j < jobs; ++j)
    suspects += localise_stragglers(read_rank_timing(dir.string()).ranks).suspect() != nullptr;
  double per_job = (cpu_seconds() - c0) / jobs;
  std::filesystem::remove_all(dir);

  // The same job as its rank 0's summary (the helper's summary mode), as the helper writes it
  // now (rows for its 8 slowest nodes) and as it wrote it before (a row a node; a column a rank).
  RankWindows first = rank_windows(sim.run(rng)), second = rank_windows(sim.run(rng));
  SummaryCost slowest =
      summary_cost(dir, testing::summary_json_v2(first, 1.8e9, 90, 159, 6, 8, true),
                   testing::summary_json_v2(second, 1.8e9 + 100, 90, 169, 6, 8, true));
  SummaryCost rows = summary_cost(dir, testing::summary_json_v2(first, 1.8e9, 90, 159, 6),
                                  testing::summary_json_v2(second, 1.8e9 + 100, 90, 169, 6));
  SummaryCost columns = summary_cost(dir, testing::summary_json(first, 1.8e9, 90, 159),
                                     testing::summary_json(second, 1.8e9 + 100, 90, 169));

  // Megatron's own timers (timing_from_log): one log interval of a 512-rank job, six timers as
  // Megatron prints them (--timing-log-option all), parsed line by line as the log is followed;
  // then the kept 15 intervals placed and judged, and their record saved and restored (the
  // store keeps it between `run --once` processes).
  std::string block_text = " iteration 10/ 500000 | elapsed time per iteration (ms): 1890.4 |\n";
  block_text += "times across ranks (ms):\n";
  for (const char* timer : {"forward-backward", "forward-compute", "backward-compute",
                            "batch-generator", "all-grads-sync", "optimizer"}) {
    block_text += std::string("  ") + timer + ":\n";
    for (int r = 0; r < 512; ++r) block_text += "     rank " + std::to_string(r) + ": 612.31\n";
  }
  std::vector<std::string_view> block_lines;
  for (std::size_t at = 0, nl; (nl = block_text.find('\n', at)) != std::string::npos; at = nl + 1)
    block_lines.push_back(std::string_view(block_text).substr(at, nl - at));
  LogRankTimes megatron;
  const int megatron_blocks = 200;
  c0 = cpu_seconds();
  for (int b = 0; b < megatron_blocks; ++b) {
    for (auto line : block_lines) megatron.feed(line);
    megatron.keep_taken(1'800'000'000 + b);
  }
  const double per_block = (cpu_seconds() - c0) / megatron_blocks;
  std::vector<std::string> hosts;
  for (int n = 1; n <= 64; ++n) hosts.push_back("node-" + std::to_string(n));
  // The kept blocks placed on 64 nodes and judged (with the window the cycle uses), and their
  // record saved and restored (what `run --once` pays a cycle): CPU each, and the record's size.
  struct KeptCost {
    double judge = 0, record = 0;
    std::size_t bytes = 0;
  };
  auto kept_cost = [&](const LogRankTimes& state, int reps) {
    StragglerSettings settings;
    settings.window = settings.min_samples = rank_timing_from_blocks(state, hosts).window;
    KeptCost out;
    double t = cpu_seconds();
    for (int j = 0; j < reps; ++j)
      (void)localise_stragglers(rank_timing_from_blocks(state, hosts).ranks, settings);
    out.judge = (cpu_seconds() - t) / reps;
    out.bytes = state.to_json().size();
    t = cpu_seconds();
    for (int j = 0; j < reps; ++j) (void)LogRankTimes::from_json(state.to_json());
    out.record = (cpu_seconds() - t) / reps;
    return out;
  };
  const KeptCost megatron_cost = kept_cost(megatron, 100);
  // Each rank's own line (timing_from_log): 512 ranks print one line a step; 200 steps read,
  // the kept 60 steps judged, and their record saved and restored.
  std::vector<std::string> rank_lines;
  for (int r = 0; r < 512; ++r)
    rank_lines.push_back("[rank" + std::to_string(r) + "]: iteration %d | compute 612.31 ms");
  LogRankTimes own;
  const int own_steps = 200;
  c0 = cpu_seconds();
  for (int step = 1; step <= own_steps; ++step) {
    for (const auto& line : rank_lines) {
      auto at = line.find("%d");
      own.feed(line.substr(0, at) + std::to_string(step) + line.substr(at + 2));
    }
    own.keep_taken(1'800'000'000 + step);
  }
  const double per_own_line = (cpu_seconds() - c0) / (own_steps * 512.0);
  const KeptCost own_cost = kept_cost(own, 20);

  // Latency: steps every 10 s, a look every 30 s; node-2 turns 0.8x at step 200. From the rank
  // files a look sees every step written; from rank 0's summary, the steps up to its last write
  // (every 10 steps: half the 20-step window).
  auto latency_of = [&](int written_every) {
    std::vector<double> out;
    for (int trial = 0; trial < 50; ++trial) {
      testing::TimingSim s;
      s.steps = 400;
      s.slow_node = "node-2";
      s.slow_speed = 0.8;
      s.slow_from_step = 200;
      s.noise_events = false;
      auto full = s.run(rng);
      for (int step = 200; step < 400; step += 3) {  // a look every 3 steps (30 s)
        int seen_upto = step - (step + 1) % written_every;
        auto seen = full;
        for (auto& r : seen)
          r.samples.erase(std::remove_if(r.samples.begin(), r.samples.end(),
                                         [&](const RankSample& x) { return x.step > seen_upto; }),
                          r.samples.end());
        if (auto v = localise_stragglers(seen); v.suspect() && v.suspect()->node == "node-2") {
          out.push_back((step - 200) * 10.0);
          break;
        }
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<double> latencies = latency_of(1), summary_latencies = latency_of(10);

  // The whole decision over a realistic mix (#28): 2,000 runs with 12 h to 14 d left, each
  // with one slow episode on one node (0.5-0.9x, lasting 1 min to 10 h, log-uniform) or none
  // (healthy noise only: 30% of runs). The finding comes at the measured latency; "evict"
  // follows the cost rule with a measured restart (save 1-5 min, startup 3-15 min). Removed =
  // the slowed GPU-time an eviction ended early, net of the restarts it paid for.
  const double found = latencies.empty() ? 300 : latencies[latencies.size() / 2];
  for (double persist : {0.0, 300.0, 600.0, 1200.0}) {
    double slowed = 0, removed = 0;
    int evictions = 0, healthy_evicted = 0;
    double latency = found + persist;  // the finding must stay open this long before evicting
    std::mt19937 mix(99);              // the same runs for every persistence
    std::uniform_real_distribution<double> u(0, 1);
    for (int run = 0; run < 2000; ++run) {
      auto& rng = mix;
      double remaining = 12 * 3600 + u(rng) * 13.5 * 86400;  // healthy-pace work left
      if (u(rng) < 0.3) {
        // Healthy: the noise test's result is that no node is a suspect; nothing to decide.
        continue;
      }
      double speed = 0.5 + 0.4 * u(rng);
      double lasts = 60 * std::pow(600.0, u(rng));  // 1 min .. 10 h
      double restart = 60 + 240 * u(rng) + 180 + 720 * u(rng);
      lasts = std::min(lasts, remaining / speed);
      double lost = lasts * (1 - speed);  // what the slow node costs if left alone
      slowed += lost;
      if (lasts <= latency) continue;  // over before it was found
      // At the finding: the cost rule sees the remaining work, not how long the episode lasts.
      EvictionCase c;
      c.speed = speed;
      c.remaining_s = remaining - latency * speed;
      c.save_s = 60;
      c.restart_s = restart;
      if (!judge_eviction(c).evict) continue;
      ++evictions;
      double saved = (lasts - latency) * (1 - speed);  // the slow time that did not happen
      removed += saved - (c.save_s + restart);
    }
    (void)healthy_evicted;
    std::printf(
        "| slowed GPU-time removed by \"evict\" after %.0f min open, net of restarts | %.0f%% "
        "(%d evictions) | ≥ 60%% |\n",
        persist / 60, slowed > 0 ? 100 * removed / slowed : 0.0, evictions);
  }
  std::printf("| slow-node measure | value | target |\n|---|---|---|\n");
  std::printf("| read + judge one job of 512 ranks (their last 6 KiB) | %.1f ms CPU | |\n",
              per_job * 1e3);
  std::printf("| the same for 1,000 such jobs, per cycle | %.1f s CPU | ≤ 10%% over today |\n",
              per_job * 1000);
  for (const auto& [form, c] :
       {std::pair<const char*, const SummaryCost&>{"rows for the 8 slowest nodes", slowest},
        {"a row a node, as before stop 76", rows},
        {"a column a rank, as before that", columns}}) {
    std::printf(
        "| read + judge one job of 512 ranks from its rank 0's summary (%s, %zu bytes): first, "
        "rewritten, unchanged | %.1f / %.1f / %.1f µs CPU | |\n",
        form, c.bytes, c.per_first * 1e6, c.per_rewritten * 1e6, c.per_unchanged * 1e6);
    // At 10 s steps rank 0 writes every 10 steps: 100 s, so 30% of the summaries are new at
    // each 30 s look.
    std::printf(
        "| the same for 1,000 such jobs a cycle: all rewritten / none (%d of 1000 kept) / 30%% "
        "(10 s steps) | %.1f / %.1f / %.1f ms CPU | ≤ 10%% over today |\n",
        c.unchanged, c.per_rewritten * 1e6, c.per_unchanged * 1e6,
        (0.3 * c.per_rewritten + 0.7 * c.per_unchanged) * 1e6);
    std::printf("| peak memory the 1,000 kept summaries added (%s) | %ld MiB | |\n", form,
                c.kept_mib);
    std::printf("| healthy summaries with a suspect (%s) | %d of 2000 | 0 |\n", form, c.suspects);
  }
  std::printf(
      "| Megatron's timers (timing_from_log), one 512-rank log interval of 6 timers parsed "
      "| %.3f ms CPU | |\n",
      per_block * 1e3);
  std::printf("| the kept 15 intervals placed on 64 nodes and judged | %.3f ms CPU | |\n",
              megatron_cost.judge * 1e3);
  std::printf(
      "| their record saved and restored (what `run --once` pays a cycle, the daemon at most "
      "every 5 min; %zu KiB) | %.3f ms CPU | |\n",
      megatron_cost.bytes >> 10, megatron_cost.record * 1e3);
  std::printf("| each rank's own line (timing_from_log), one line read | %.2f µs CPU | |\n",
              per_own_line * 1e6);
  std::printf("| the kept %zu steps of 512 ranks placed on 64 nodes and judged | %.3f ms CPU | |\n",
              kLineStepsKept, own_cost.judge * 1e3);
  std::printf(
      "| their record saved and restored (what `run --once` pays a cycle, the daemon at most "
      "every 5 min; %zu KiB) | %.3f ms CPU | |\n",
      own_cost.bytes >> 10, own_cost.record * 1e3);
  std::printf("| healthy 512-rank jobs with a suspect (rank files) | %d of %d | 0 |\n", suspects,
              jobs);
  if (!summary_latencies.empty())
    std::printf(
        "| the same 0.8× node from rank 0's summary (written every 10 steps) | median %.0f s, "
        "max %.0f s (%zu of 50 found) | ≤ 5 min |\n",
        summary_latencies[summary_latencies.size() / 2], summary_latencies.back(),
        summary_latencies.size());
  if (!latencies.empty())
    std::printf(
        "| 0.8× node, 10 s steps, 30 s tick: slowdown → finding | median %.0f s, max %.0f s "
        "(%zu of 50 found) | ≤ 5 min |\n",
        latencies[latencies.size() / 2], latencies.back(), latencies.size());
  std::printf("| healthy nodes evicted | 0 (no suspect in the noise test above) | 0 |\n");
  return 0;
}

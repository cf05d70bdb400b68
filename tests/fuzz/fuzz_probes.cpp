// libFuzzer targets for the log, GPU, quota and config parsers (see fuzz_slurm.cpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"
#include "fuzz_target.h"
#include "probes/gpu/dcgmi.h"
#include "probes/gpu/dcgmi_dmon.h"
#include "probes/gpu/gpu_record.h"
#include "probes/gpu/gpu_telemetry.h"
#include "probes/gpu/xid_line.h"
#include "probes/kernel_exit.h"
#include "probes/megatron_rank_times.h"
#include "probes/perfdata.h"
#include "probes/quota.h"
#include "probes/rank_line_times.h"
#include "probes/rank_look.h"
#include "probes/rank_processes.h"
#include "probes/rank_timing.h"
#include "probes/training_log.h"
#include "rules/node_report.h"
#include "rules/rank_exit.h"
#include "rules/straggler.h"
#include "rules/xid_table.h"
#include "slurm/srun_label.h"
#include "util/strings.h"
#include "util/text.h"

using namespace llmwatch;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  switch (fuzz::target()) {
    case 7: {
      static const TrainingLogParser parser;
      for (const auto& line : split(text, '\n')) (void)parser.parse(line);
      break;
    }
    case 8: {
      for (const auto& line : split(text, '\n')) (void)parse_xid_line(line);
      break;
    }
    case 9: {
      // Properties: every telemetry figure read is finite and non-negative, its description
      // valid UTF-8, and the node report carrying it, and the text the store keeps, read back the
      // same (all but the power cap's counter, which is read and not kept).
      auto check_telemetry = [](const GpuParse& p) {
        auto telemetry = gpu_telemetry(p.gpus);
        for (auto& t : telemetry) {
          for (auto v : {t.sm_mhz, t.sm_max_mhz, t.power_w, t.power_limit_w, t.temp_c, t.util_pct,
                         t.processes, t.sw_power_cap_us, t.sw_thermal_us, t.hw_thermal_us,
                         t.hw_power_brake_us})
            if (v && !(std::isfinite(*v) && *v >= 0)) __builtin_trap();
          // describe() prints only numbers and fixed names: never the input's bytes.
          if (!is_valid_utf8(describe(t))) __builtin_trap();
          t.sw_power_cap_us.reset();
        }
        NodeReport r;
        r.telemetry = telemetry;
        auto back = NodeReport::from_json(r.to_json());
        if (!back || back->telemetry != telemetry) __builtin_trap();
        // The store's text form: valid JSON that reads back the same.
        auto stored = nlohmann::json::parse(telemetry_json_text(telemetry), nullptr, false);
        if (stored.is_discarded() || telemetry_from_json(stored) != telemetry) __builtin_trap();
      };
      auto csv = parse_nvidia_smi_csv(text);
      for (const auto& g : csv.gpus)
        for (const auto& [k, _] : g.fields) (void)g.number(k), (void)g.flag(k);
      check_telemetry(csv);
      check_telemetry(parse_nvidia_smi_q(text));
      // dcgmi dmon's table: GPUs or an error, never both; the same properties for each figure.
      auto dmon = parse_dcgmi_dmon(text);
      if (!dmon.ok() && !dmon.gpus.empty()) __builtin_trap();
      for (const auto& t : dmon.gpus)
        for (auto v : {t.sm_mhz, t.sm_max_mhz, t.power_w, t.power_limit_w, t.temp_c, t.util_pct,
                       t.pcie_gen, t.pcie_width})
          if (v && !(std::isfinite(*v) && *v >= 0)) __builtin_trap();
      (void)parse_nvlink_status(text);
      break;
    }
    case 10: {
      (void)parse_nvidia_smi_xml(text);
      break;
    }
    case 11: {
      // dcgmi diag's figures: each a positive, finite number under a plain ASCII name (they reach
      // findings and the fleet's yardsticks).
      for (const auto& [name, v] : parse_dcgmi_diag(text).figures)
        if (!std::isfinite(v) || v <= 0 || name.empty() ||
            name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_/") != std::string::npos)
          __builtin_trap();
      (void)parse_dcgmi_health(text);
      (void)NodeReport::from_json(text);
      // Perfdata: every figure kept is finite under a printable label (it reaches findings).
      for (const auto& [label, v] : parse_perfdata(text))
        if (!std::isfinite(v) || label.empty() || !is_valid_utf8(label)) __builtin_trap();
      break;
    }
    case 12: {
      for (const char* kind : {"lfs", "mmlsquota", "beegfs", "quota"})
        (void)parse_quota(kind, text);
      break;
    }
    case 15: {
      // Properties, not only no crash: every sample read is a finite, non-negative time, and the
      // straggler rule over it gives scores within 0..1.
      auto series = parse_rank_timing(text);
      for (const auto& s : series.samples)
        if (!(s.compute_s >= 0 && s.wait_s >= 0 && std::isfinite(s.compute_s))) __builtin_trap();
      series.host = "node-1";
      RankSeries other = series;
      other.host = "node-2";
      for (const auto& n : localise_stragglers({series, other}).nodes)
        if (!(n.relative >= 0 && n.relative <= 1 && n.individual >= 0 && n.individual <= 1))
          __builtin_trap();
      // A rank 0's summary: whole or an error; every window finite, its best never above now, on a
      // named node; and the rule over it again scores within 0..1.
      auto summary = parse_timing_summary(text);
      if (!summary.error.empty() && !summary.windows.empty()) __builtin_trap();
      for (const auto& w : summary.windows)
        if (!(std::isfinite(w.now) && w.best >= 0 && w.best <= w.now &&
              w.host < summary.windows.hosts.size() && !summary.windows.host_of(w).empty()))
          __builtin_trap();
      // A row a node ("v":2), or for each of the slowest few ("v":3): on a named node, its ranks
      // within the list and its slowest among them, its figures finite and its best never above
      // now.
      const RankWindows& rows = summary.windows;
      for (const auto& n : rows.nodes)
        if (!(n.host < rows.hosts.size() && n.ranks_from < n.ranks_to &&
              n.ranks_to <= rows.node_ranks.size() &&
              std::find(rows.node_ranks.begin() + n.ranks_from,
                        rows.node_ranks.begin() + n.ranks_to,
                        n.slowest) != rows.node_ranks.begin() + n.ranks_to &&
              std::isfinite(n.now) && n.best <= n.now && std::isfinite(n.peers)))
          __builtin_trap();
      if (!rows.nodes.empty() && !rows.ranks.empty()) __builtin_trap();
      // Each node once: a name listed twice is one node (or, in rows, an error).
      auto hosts = summary.windows.hosts;
      std::sort(hosts.begin(), hosts.end());
      if (std::adjacent_find(hosts.begin(), hosts.end()) != hosts.end()) __builtin_trap();
      const StragglerVerdict judged = judge_nodes(summary.windows);
      for (const auto& n : judged.nodes)
        if (!(n.relative >= 0 && n.relative <= 1 && n.individual >= 0 && n.individual <= 1))
          __builtin_trap();
      // "v":3: each node has a row at most once, and every node listed is judged, row or not.
      if (rows.slowest_only && (rows.host_ranks.size() != rows.hosts.size() + 1 ||
                                rows.nodes.size() > rows.hosts.size() ||
                                (rows.hosts.size() >= 2 && judged.judged() != rows.hosts.size())))
        __builtin_trap();
      // Megatron's per-rank timers in a log: every compute time finite and non-negative, every
      // rank in range; placed on a named node or an error, never both.
      LogRankTimes megatron;
      for (std::size_t at = 0; at <= text.size();) {
        std::size_t nl = text.find('\n', at);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = std::string_view(text).substr(at, nl - at);
        megatron.feed(line);
        // Each rank's own line: a rank in range, a step, and a compute time that is finite and
        // non-negative or none (no unit said), never a guess.
        if (auto r = parse_rank_line(line))
          if (!(r->rank >= 0 && r->rank < kMaxLogRank && r->step >= 0 &&
                (r->compute_s == -1 || (std::isfinite(r->compute_s) && r->compute_s >= 0))))
            __builtin_trap();
        at = nl + 1;
      }
      megatron.feed("");
      megatron.keep_taken(1);
      for (const auto& [ts, b] : megatron.blocks)
        for (const auto& [rank, s] : b.compute_s)
          if (!(rank >= 0 && rank < MegatronRankTimes::kMaxRank && std::isfinite(s) && s >= 0))
            __builtin_trap();
      // What the store keeps of it comes back the same, and stored text never throws.
      auto back = LogRankTimes::from_json(megatron.to_json());
      if (!back || back->blocks.size() != megatron.blocks.size()) __builtin_trap();
      (void)LogRankTimes::from_json(std::string(text));
      auto placed = rank_timing_from_blocks(megatron, {"node-1", "node-2"});
      if (!placed.error.empty() && !placed.ranks.empty()) __builtin_trap();
      for (const auto& r : placed.ranks)
        if (r.host.empty()) __builtin_trap();
      break;
    }
    case 16: {
      // What each node's `llmwatch stacks --ranks` printed (#30). Properties: a block read whole
      // prints back as it was read; a rank is said ended only on every node's whole answer and
      // only where no process of that rank's name was read, or its own was seen exiting (or,
      // for srun's task, a torchrun worker it launched); anything less is unknown.
      auto answers = parse_node_ranks(text);
      std::vector<std::string> nodes;
      bool whole = !answers.empty();
      for (const auto& a : answers) {
        nodes.push_back(a.node);
        whole &= a.whole;
        if (a.whole && parse_node_ranks(format_node_ranks(a)).size() != 1) __builtin_trap();
      }
      for (bool task : {false, true})
        for (int rank : {-1, 0, 1, 3}) {
          auto v = rank_exit(answers, nodes, rank, task);
          if (v.seen == RankSeen::Unknown && v.why.empty()) __builtin_trap();
          if (v.seen != RankSeen::Ended) continue;
          if (!whole) __builtin_trap();
          // No process read names that rank as its own (its parent on its node not of that
          // rank), or its own was seen exiting, or (srun's label) a worker it launched was.
          bool any_rank = false;
          for (const auto& a : answers)
            for (const auto& p : a.processes) any_rank |= p.by == "RANK";
          const std::string by = any_rank && !task ? "RANK" : "SLURM_PROCID";
          // A line that named no rank: the rank the verdict names.
          const int said = rank >= 0 ? rank : std::atoi(v.why.c_str() + v.why.find(' ') + 1);
          for (const auto& a : answers)
            for (const auto& p : a.processes) {
              if (p.by != by || p.rank != said) continue;
              const bool child = std::any_of(
                  a.processes.begin(), a.processes.end(),
                  [&](const auto& q) { return q.pid == p.ppid && q.by == by && q.rank == said; });
              const bool worker_exiting =
                  task && std::any_of(a.processes.begin(), a.processes.end(), [&](const auto& q) {
                    return q.ppid == p.pid && q.by == "RANK" && !q.exiting.empty();
                  });
              if (!child && p.exiting.empty() && !worker_exiting) __builtin_trap();
            }
        }
      // The process a node looks into for a rank is one of its own, named that rank; for every
      // rank, each of them is a rank's own.
      for (const auto& a : answers) {
        auto every = own_rank_pids(a.processes);
        bool node_rank = false;
        for (const auto& p : a.processes) node_rank |= p.by == "RANK";
        const std::string node_by = node_rank ? "RANK" : "SLURM_PROCID";
        for (int pid : every)
          if (std::none_of(a.processes.begin(), a.processes.end(), [&](const auto& p) {
                return p.pid == pid && p.by == node_by &&
                       std::none_of(a.processes.begin(), a.processes.end(), [&](const auto& q) {
                         return q.pid == p.ppid && q.by == node_by && q.rank == p.rank;
                       });
              }))
            __builtin_trap();
      }
      for (const auto& a : answers)
        for (int rank : {0, 1, 3})
          if (int pid = rank_process_pid(a.processes, rank, false))
            if (std::none_of(a.processes.begin(), a.processes.end(),
                             [&](const auto& p) { return p.pid == pid && p.rank == rank; }))
              __builtin_trap();
      // The same text as three nodes' answers through srun --label, its lines dealt out in turn:
      // each node's lines come back whole and in order; and a node whose answer begins with a
      // stack block gives the look no rank, whatever its stacks' lines say.
      std::string labelled, after_stack, dealt[3];
      std::size_t line_no = 0;
      for (const auto& line : split(std::string(text), '\n')) {
        labelled += std::to_string(line_no % 3) + ": " + line + "\n";
        after_stack += "0: " + line + "\n";
        dealt[line_no++ % 3] += line + "\n";
      }
      auto tasks = srun_task_outputs(labelled);
      std::size_t k = 0;
      for (const auto& d : dealt)
        if (!d.empty() && (k >= tasks.size() || tasks[k++] != d)) __builtin_trap();
      (void)read_look_output(labelled);
      if (!read_look_output("0: " + std::string(kStackHeader) + "node=n pid=1 comm=p ===\n" +
                            after_stack)
               .answers.empty())
        __builtin_trap();
      // The text's halves as a thread's /proc stat and status: an exit is said only of a thread
      // read, and only as what was read says (doomed, or its memory being dumped).
      const auto thread =
          parse_thread_exit_state(text.substr(0, text.size() / 2), text.substr(text.size() / 2));
      const std::string ended = kernel_exit({thread});
      if (!ended.empty() && thread.state == '?') __builtin_trap();
      if (ended == "do_exit" && !thread.doomed()) __builtin_trap();
      if (ended == "do_coredump" && !thread.core_dumping) __builtin_trap();
      if (!ended.empty() && ended != "do_exit" && ended != "do_coredump") __builtin_trap();
      break;
    }
    case 13: {
      (void)load_config_string(text, "fuzz.toml");
      (void)parse_xid_table(text, "fuzz-xid.toml");
      break;
    }
    default:
      fuzz::unknown_target();
  }
  return 0;
}

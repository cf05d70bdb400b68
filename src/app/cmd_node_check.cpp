// `llmwatch node-check`: runs on a compute node (Slurm HealthCheckProgram, epilog, srun, or
// by hand); prints a verdict per GPU and for the node, exits with its Nagios code.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include "app/commands.h"
#include "cycle/executor.h"
#include "cycle/supervisor.h"
#include "policy/node_policy.h"
#include "probes/gpu/kernel_log.h"
#include "probes/gpu/node_sources.h"
#include "rules/node_health.h"
#include "slurm/slurm_client.h"
#include "store/store.h"
#include "util/files.h"
#include "util/paths.h"
#include "util/strings.h"
#include "util/text.h"

namespace llmwatch {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}

std::string node_name(const NodeCheckOptions& o) {
  if (!o.node.empty()) return o.node;
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  std::string h = hostname();
  return h.substr(0, h.find('.'));
}

void print_text(const NodeReport& r) {
  std::cout << "LLMWATCH " << verdict_name(r.verdict) << " - " << r.node << ": " << r.headline()
            << "\n";
  for (const auto& i : r.items) {
    if (i.verdict == Verdict::Ok && i.evidence.empty()) continue;
    std::cout << "  " << verdict_name(i.verdict) << "  " << i.summary
              << (i.hint.empty() ? "" : "  [" + i.hint + "]") << "\n";
    for (const auto& e : i.evidence) std::cout << "      " << e << "\n";
  }
  if (!r.gpus.empty()) {
    std::cout << "  GPUs:";
    for (const auto& [gpu, v] : r.gpus) std::cout << " " << gpu << "=" << verdict_name(v);
    std::cout << "\n";
  }
  for (const auto& t : r.telemetry) std::cout << "  " << terminal_safe(describe(t)) << "\n";
  std::cout << "  sources: " << (r.sources.empty() ? "none" : "");
  for (size_t i = 0; i < r.sources.size(); ++i) std::cout << (i ? ", " : "") << r.sources[i];
  std::cout << "\n";
}

// Results go to DIR/<node>.json through a temporary file, so a reader never sees half of one.
Status write_result(const std::string& dir, const NodeReport& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return write_file_atomic(dir + "/" + r.node + ".json", r.to_json() + "\n");
}

// --drain-self: the supervisor's own drain, under the same cluster-wide limits: the hourly
// budget and the journal in the shared state store, and max_drained_fraction against sinfo
// (a node-check on every node of a bad rack must not drain the rack). Whatever cannot be
// checked (Slurm, the store) leaves the node in service. Someone else's reason is left alone.
std::string drain_self(const Config& config, const NodeReport& r) {
  SlurmClient slurm(config.slurm);
  auto show = slurm.show_node(r.node);
  if (show.empty()) return "scontrol show node " + r.node + " failed: not drained";
  std::string reason = show["Reason"];
  if (reason_by(reason) == ReasonBy::Someone)
    return "left alone: already has a reason set by someone else (" + sanitize_line(reason, 80) +
           ")";
  if (reason_by(reason) == ReasonBy::Llmwatch) return "already drained by llmwatch";
  auto sinfo = slurm.nodes();
  if (!sinfo.ok())
    return "not drained: max_drained_fraction cannot be checked (" + sinfo.error + ")";
  if (auto blocked = drain_blocked(r.node, sinfo.nodes, config.gpu.max_drained_fraction);
      !blocked.empty())
    return "not drained: " + blocked;
  std::unique_ptr<Store> store;
  try {
    store = std::make_unique<Store>(config.state_dir);
  } catch (const std::exception& e) {
    return std::string("not drained: the drain budget cannot be read (") + e.what() + ")";
  }
  double now = unix_now();
  ActionRequest base;
  base.job = r.node;
  base.finding = make_finding("node:" + r.node, r.node, "gpu", Severity::Critical, r.headline());
  base.episode = now;
  Executor(config, *store, slurm, now).run_plan(base, {"drain"});
  for (const auto& a : store->recent_actions(20))
    if (a.kind == "drain" && a.subject == r.node && a.started == now)
      return (a.state == "done" ? "" : "not drained: ") + a.detail;
  return "not drained: the drain was not journaled";
}

NodeReport check_once(const Config& config, const XidTable& table, const std::string& node,
                      const NodeCheckOptions& o, NodeCheckState& state) {
  NodeInputs in = gather_node_inputs(config.gpu, node);
  in.plugins = run_node_plugins(config.checks, node,
                                config.gpu.node_state_dir + "/" + node + ".check.", unix_now());
  if (in.xids) {
    std::vector<XidEvent> live;
    for (auto& e : *in.xids) {
      std::string id = xid_identity(e);
      if (o.ack) state.acked.insert(id);
      if (state.acked.count(id)) continue;  // repaired and acknowledged
      state.seen.insert(id);
      live.push_back(std::move(e));
    }
    in.xids = std::move(live);
  }
  return evaluate_node(node, unix_now(), in, config.gpu, table);
}

}  // namespace

int cmd_node_check(const Config& config, const NodeCheckOptions& o) {
  auto table = load_xid_table(config.gpu.xid_table);
  if (!table.table) {
    std::cerr << "llmwatch node-check: " << table.error << "\n";
    return 3;  // UNKNOWN: cannot judge without the table
  }
  std::string node = node_name(o);
  std::string state_path = config.gpu.node_state_dir + "/" + node + ".json";
  NodeCheckState state = NodeCheckState::load(state_path, current_boot_id());
  std::string out_dir = o.output_dir;
  if (o.follow) {
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
  }
  std::string last;
  auto every = std::chrono::milliseconds(static_cast<long long>(o.every * 1000));
  for (;;) {
    NodeReport r = check_once(config, *table.table, node, o, state);
    if (!o.save_state)
      ;  // --print-only: the caller reads stdout, and the state is the node's (root's)
    else if (auto saved = state.save(state_path); !saved && !o.follow)
      std::cerr << "llmwatch node-check: state not saved: " << saved.error() << "\n";
    if (!out_dir.empty())
      if (auto written = write_result(out_dir, r); !written) {
        std::cerr << "llmwatch node-check: " << written.error() << "\n";
        if (!o.follow) return 3;
      }
    if (o.drain_self && r.verdict == Verdict::Critical && r.wants_drain()) {
      std::string what = drain_self(config, r);
      if (!o.json) std::cout << "  drain-self: " << what << "\n";
    }
    if (!o.follow) {
      if (o.json)
        std::cout << r.to_json() << "\n";
      else
        print_text(r);
      return nagios_code(r.verdict);
    }
    // Following: print only changes, so the output is a log of verdict transitions.
    std::string now = std::string(verdict_name(r.verdict)) + r.headline();
    if (now != last) {
      if (o.json)
        std::cout << r.to_json() << std::endl;
      else
        print_text(r), std::cout.flush();
      last = now;
    }
    for (auto slept = std::chrono::milliseconds(0); slept < every && !g_stop;
         slept += std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_stop) return 0;
  }
}

}  // namespace llmwatch

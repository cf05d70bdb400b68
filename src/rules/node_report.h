#pragma once
// A node's health as `llmwatch node-check` concludes it: a verdict per GPU and for the node
// (Nagios: OK 0, WARN 1, CRITICAL 2, UNKNOWN 3) and the items that led to it, each with the
// lines that prove it. The same JSON travels from node-check (stdout, results directory) to
// the supervisor.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "probes/gpu/gpu_telemetry.h"
#include "util/result.h"

namespace llmwatch {

enum class Verdict { Ok, Warn, Critical, Unknown };

const char* verdict_name(Verdict v);  // OK, WARN, CRITICAL, UNKNOWN
std::optional<Verdict> verdict_from_name(const std::string& name);
int nagios_code(Verdict v);
// CRITICAL beats UNKNOWN (a proven fault stands even if another source could not look),
// UNKNOWN beats WARN (not being able to look matters more than a warning), WARN beats OK.
Verdict worse(Verdict a, Verdict b);

struct HealthItem {
  std::string check;  // xid, ecc, remap, retired-pages, recovery-action, nvlink, pcie, ...
  int gpu = -1;       // -1: the node as a whole
  Verdict verdict = Verdict::Ok;
  // What should happen: drain | reset | rma | save (checkpoint, keep running) | app | "".
  std::string hint;
  std::string summary;  // one line, e.g. "Xid 79 GPU 3: GPU has fallen off the bus"
  std::vector<std::string> evidence;
};

struct NodeReport {
  std::string node;
  double ts = 0;
  Verdict verdict = Verdict::Ok;
  std::map<int, Verdict> gpus;
  std::vector<HealthItem> items;
  int gpu_processes = -1;            // compute processes on the GPUs; -1: not known
  std::vector<std::string> sources;  // what was looked at
  // What each GPU was doing when it was looked at (clocks, power, throttle reasons): evidence
  // for a slow node's finding, never a verdict by itself.
  std::vector<GpuTelemetry> telemetry;
  // The figures the node's [[check]]s reported, as "<check>/<label>" (nhc-gemm/gflops): judged
  // against the same figure on the rest of the fleet (rules/fleet_figures.h).
  std::map<std::string, double> figures;

  // The worst item's summary ("all checks passed" when none): drain reasons and alerts.
  std::string headline() const;
  // What is wrong, as which checks warn or fail on which GPUs ("check:scratch@-1 WARN",
  // "xid@3 CRITICAL"): unlike the headline, it stays the same while a problem's figure moves
  // (a warm GPU's degrees, a site check's "91.2% used").
  std::set<std::string> problems() const;
  bool wants_drain() const;  // a CRITICAL item whose hint is drain, reset or rma
  std::string to_json() const;
  // nullopt with *error set when the text is not a node report.
  static Result<NodeReport> from_json(const std::string& text);
};

}  // namespace llmwatch

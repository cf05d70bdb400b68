#pragma once
// DCGM's answers: `dcgmi diag -r N -j` in both document shapes (3.x root key
// "DCGM GPU Diagnostic"; 4.x "DCGM Diagnostic" with per-entity results, warnings[] carrying
// error_severity, test_summary and metadata.version) and `dcgmi health -c`.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmwatch {

struct DcgmiResult {
  std::string category, test;
  int gpu = -1;        // -1: the test as a whole
  std::string status;  // Pass | Fail | Warn | Skip | Not Run ...
  std::string message;
  int severity = -1;  // 4.x error_severity, when given
};

struct DcgmiDiag {
  std::string version;  // metadata.version (4.x) or "3.x"
  std::vector<DcgmiResult> results;
  // The performance its tests measured, "<test>/<measure>" -> the node's slowest GPU's value
  // (higher is better: one slow GPU sets the pace of every job on the node), from the results'
  // info lines: "GPU 0 calculated at approximately 9876.54 gigaflops during this test"
  // (diagnostic: gflops), "GPU 0 relative stress level\t4321" (targeted_stress: stress_level),
  // "GPU to Host bandwidth:\t\t24.52 GB/s" (pcie: d2h_gbps, h2d_gbps, bidir_gbps). Judged
  // against the same figure on the rest of the fleet (rules/fleet_figures.h). An info line of
  // any other shape is not a figure: never guessed.
  std::map<std::string, double> figures;
  // Why the document says nothing about health: unparseable, a runtime error, or a run that
  // was aborted (GPUs busy): such a run is unknown, never a pass.
  std::string not_run;
  bool ran() const { return not_run.empty(); }
};

DcgmiDiag parse_dcgmi_diag(const std::string& text);

// `dcgmi health -c`: "Healthy", "Warning", "Failure", or nullopt when the output says none.
std::optional<std::string> parse_dcgmi_health(const std::string& text);

}  // namespace llmwatch

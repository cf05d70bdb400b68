#pragma once
// A node against the fleet (#28): the figure a [[check]] reports on each node (a GEMM's
// GFLOP/s, a memory bandwidth, as Nagios perfdata) is judged against the same figure on the
// other nodes, not against a fixed threshold: hardware generations, clocks and sites differ,
// and what is slow is what is slower than its peers. Median and MAD, as for ranks inside a job
// (rules/straggler.h). Pure.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rules/finding.h"

namespace llmwatch {

struct NodeFigure {
  std::string node;
  double value = 0;
};

struct FleetFigureSettings {
  std::string figure;         // "<check>/<label>", higher is better
  double below = 0.85;        // a node under this × the fleet median ...
  double mad_k = 3;           // ... and this many robust deviations of the others out
  std::size_t min_nodes = 5;  // fewer nodes with the figure: no fleet to speak of
};

// A node's stored figures ({"<check>/<label>": [value, ts]}) with `figures` measured at `ts`
// merged in; nullopt when nothing changed. Reading never throws.
std::optional<std::string> merge_node_figures(const std::string& text,
                                              const std::map<std::string, double>& figures,
                                              double ts);
// figure -> value, for the figures measured at or after `since`.
std::map<std::string, double> read_node_figures(const std::string& text, double since);
// figure -> its value and when it was measured, all of them.
struct FigureAt {
  double value = 0, ts = 0;
};
std::map<std::string, FigureAt> read_node_figures_at(const std::string& text);

// node:<node>/fleet-slow (a warning; one episode per figure) for each node that falls out.
std::vector<Finding> judge_fleet_figure(const FleetFigureSettings& s,
                                        const std::vector<NodeFigure>& fleet);

}  // namespace llmwatch

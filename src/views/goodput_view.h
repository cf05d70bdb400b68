#pragma once
// The goodput ledger read back (#29): GPU-hours per bucket over a period, ETTR (productive
// over allocated) and the top losers, grouped by cause, node, job or day. `llmwatch goodput`,
// the `status` line, `llmwatch job` and the metrics all read it from here, so they agree.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/goodput_ledger.h"

namespace llmwatch {

struct GoodputTotals {
  std::map<std::string, double> buckets;  // bucket -> GPU-seconds (queue included)
  double allocated = 0;                   // every bucket but queue
  double productive() const;
  double ettr() const;  // productive / allocated; 0 when nothing was allocated
};

GoodputTotals goodput_totals(const std::vector<GoodputRow>& rows, const std::string& job = "");

// The lost GPU-seconds (every bucket but productive and queue) per key of `by` (cause, node,
// job, user, day), largest first, each with its top causes: "node-17: 212 GPU-h across 4 runs (Xid
// 79 ×3 ...)" is built from this.
struct GoodputLoser {
  std::string key;
  double lost = 0;
  std::map<std::string, double> causes;
  int runs = 0;
};
// The owner of each run (its [[job]]'s user), for grouping by user; a run not in it is
// "(owner unknown)" (a [[job]] since removed from the config).
using RunOwners = std::map<std::string, std::string>;
std::vector<GoodputLoser> goodput_losers(const std::vector<GoodputRow>& rows, const std::string& by,
                                         const RunOwners& owners = {});

// "goodput 30d: 93.4% (hang 1.1%, rework 2.0%, ...)"; "" when nothing was accounted.
std::string goodput_line(const GoodputTotals& t, const std::string& period);

// The whole answer of `llmwatch goodput`, as JSON and as a table.
nlohmann::json goodput_json(const std::vector<GoodputRow>& rows, const std::string& by,
                            const RunOwners& owners = {});
std::string goodput_table(const nlohmann::json& report);

}  // namespace llmwatch

#pragma once
// The goodput ledger's rows (#29): GPU-seconds per UTC day, run, bucket, cause and node. The
// record phase adds each look's charges (rules/goodput); views read sums over a period.
#include <cstdint>
#include <string>
#include <vector>

#include "rules/goodput.h"
#include "store/store.h"

namespace llmwatch {

struct GoodputRow {
  std::int64_t day = 0;  // days since the epoch, UTC
  std::string job, bucket, cause, node;
  double gpu_seconds = 0;
};

class GoodputLedger {
 public:
  explicit GoodputLedger(Store& store) : db_(store.db()) {}
  void add(const std::string& job, double ts, const std::vector<GoodputCharge>& charges);
  // Every row from the day `since` falls in (of one run when `job` is set), oldest first.
  std::vector<GoodputRow> rows(double since, const std::string& job = "");

 private:
  Db& db_;
};

}  // namespace llmwatch

#pragma once
// The goodput ledger's rows (#29): GPU-seconds per UTC day, run, bucket, cause and node. The
// record phase adds each look's charges (rules/goodput); views read sums over a period.
#include <cstdint>
#include <string>
#include <vector>

#include "rules/goodput.h"
#include "store/goodput_row.h"
#include "store/store.h"

namespace llmwatch {

class GoodputLedger {
 public:
  explicit GoodputLedger(Store& store) : store_(store) {}
  void add(const std::string& job, double ts, const std::vector<GoodputCharge>& charges);
  // Every row from the day `since` falls in (of one run when `job` is set), oldest first,
  // this process's pending looks included (reading writes nothing).
  std::vector<GoodputRow> rows(double since, const std::string& job = "");

  static std::int64_t day_of(double ts);
  // Adds each row's GPU-seconds to its day, run, bucket, cause and node.
  static void add_rows(Db& db, const std::vector<GoodputRow>& rows);

 private:
  Store& store_;
};

}  // namespace llmwatch

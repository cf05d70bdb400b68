#include "store/goodput_ledger.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace llmwatch {

std::int64_t GoodputLedger::day_of(double ts) {
  return static_cast<std::int64_t>(std::floor(ts / 86400));
}

void GoodputLedger::add(const std::string& job, double ts,
                        const std::vector<GoodputCharge>& charges) {
  std::vector<GoodputRow> rows;
  for (const auto& c : charges)
    rows.push_back({day_of(ts), job, c.bucket, c.cause, c.node, c.gpu_s});
  add_rows(store_.db(), rows);
}

void GoodputLedger::add_rows(Db& db, const std::vector<GoodputRow>& rows) {
  std::set<std::string> taken_back;  // runs a charge was taken back from (Store::record_goodput)
  for (const auto& c : rows) {
    db.prepare(
          "INSERT INTO goodput (day, job, bucket, cause, node, gpu_seconds) VALUES (?,?,?,?,?,?) "
          "ON CONFLICT (day, job, bucket, cause, node) DO UPDATE SET "
          "gpu_seconds = gpu_seconds + excluded.gpu_seconds")
        .bind(1, c.day)
        .bind(2, c.job)
        .bind(3, c.bucket)
        .bind(4, c.cause)
        .bind(5, c.node)
        .bind(6, c.gpu_seconds)
        .run();
    if (c.gpu_seconds < 0) taken_back.insert(c.job);
  }
  // What a charge taken back leaves of its row is rounding.
  for (const auto& job : taken_back)
    db.prepare("DELETE FROM goodput WHERE job = ? AND abs(gpu_seconds) < 1e-6").bind(1, job).run();
}

std::vector<GoodputRow> GoodputLedger::rows(double since, const std::string& job) {
  auto st = store_.db().prepare(
      "SELECT day, job, bucket, cause, node, gpu_seconds FROM goodput WHERE day >= ? AND "
      "(? = '' OR job = ?) ORDER BY day");
  st.bind(1, day_of(since)).bind(2, job).bind(3, job);
  std::vector<GoodputRow> out;
  while (st.step())
    out.push_back({st.integer(0), st.text(1), st.text(2), st.text(3), st.text(4), st.real(5)});
  // What this process accounted and has not written yet (Store::record_goodput).
  auto pending = store_.pending_goodput(day_of(since), job);
  out.insert(out.end(), pending.begin(), pending.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const GoodputRow& a, const GoodputRow& b) { return a.day < b.day; });
  return out;
}

}  // namespace llmwatch

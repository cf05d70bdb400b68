#include "views/goodput_view.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "util/units.h"

namespace llmwatch {
namespace {

bool lost_bucket(const std::string& b) {
  return b != "productive" && b != "queue" && b != "open";
}

std::string pct(double part, double whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100 * part / whole : 0.0);
  return buf;
}

std::string gpu_hours(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, seconds >= 360 * 100 ? "%.0f GPU-h" : "%.2f GPU-h",
                seconds / 3600);
  return buf;
}

std::string key_of(const GoodputRow& r, const std::string& by, const RunOwners& owners) {
  if (by == "node") return r.node.empty() ? "(no node named)" : r.node;
  if (by == "job") return r.job;
  if (by == "user") {
    auto it = owners.find(r.job);
    return it != owners.end() && !it->second.empty() ? it->second : "(owner unknown)";
  }
  if (by == "day") return format_utc(static_cast<double>(r.day) * 86400).substr(0, 10);
  return r.cause.empty() ? r.bucket : r.cause;  // cause
}

}  // namespace

double GoodputTotals::productive() const {
  auto it = buckets.find("productive");
  return it == buckets.end() ? 0 : it->second;
}

double GoodputTotals::ettr() const {
  return allocated > 0 ? productive() / allocated : 0;
}

GoodputTotals goodput_totals(const std::vector<GoodputRow>& rows, const std::string& job) {
  GoodputTotals t;
  for (const auto& r : rows) {
    if (!job.empty() && r.job != job) continue;
    t.buckets[r.bucket] += r.gpu_seconds;
    if (r.bucket != "queue") t.allocated += r.gpu_seconds;
  }
  return t;
}

std::vector<GoodputLoser> goodput_losers(const std::vector<GoodputRow>& rows, const std::string& by,
                                         const RunOwners& owners) {
  std::map<std::string, GoodputLoser> by_key;
  std::map<std::string, std::set<std::string>> runs;
  for (const auto& r : rows) {
    if (!lost_bucket(r.bucket)) continue;
    std::string key = key_of(r, by, owners);
    auto& l = by_key[key];
    l.key = std::move(key);
    l.lost += r.gpu_seconds;
    l.causes[r.cause.empty() ? r.bucket : r.cause] += r.gpu_seconds;
    runs[l.key].insert(r.job);
  }
  std::vector<GoodputLoser> out;
  for (auto& [k, l] : by_key) {
    l.runs = static_cast<int>(runs[k].size());
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(), [](const GoodputLoser& a, const GoodputLoser& b) {
    return a.lost != b.lost ? a.lost > b.lost : a.key < b.key;
  });
  return out;
}

std::string goodput_line(const GoodputTotals& t, const std::string& period) {
  if (t.allocated <= 0) return "";
  std::vector<std::pair<double, std::string>> lost;
  for (const auto& [b, s] : t.buckets)
    if (lost_bucket(b) && s > 0) lost.emplace_back(s, b);
  std::sort(lost.rbegin(), lost.rend());
  std::string out = "goodput " + period + ": " + pct(t.productive(), t.allocated);
  for (size_t i = 0; i < lost.size(); ++i)
    out += std::string(i ? ", " : " (") + lost[i].second + " " + pct(lost[i].first, t.allocated);
  return out + (lost.empty() ? "" : ")");
}

nlohmann::json goodput_json(const std::vector<GoodputRow>& rows, const std::string& by,
                            const RunOwners& owners) {
  auto t = goodput_totals(rows);
  nlohmann::json buckets = nlohmann::json::object();
  for (const char* b : kGoodputBuckets) buckets[b] = t.buckets.count(b) ? t.buckets[b] : 0.0;
  nlohmann::json losers = nlohmann::json::array();
  for (const auto& l : goodput_losers(rows, by, owners)) {
    nlohmann::json causes = nlohmann::json::object();
    for (const auto& [c, s] : l.causes) causes[c] = s;
    losers.push_back(
        {{"key", l.key}, {"lost_gpu_seconds", l.lost}, {"runs", l.runs}, {"causes", causes}});
  }
  return {{"by", by},
          {"allocated_gpu_seconds", t.allocated},
          {"ettr", t.ettr()},
          {"gpu_seconds", buckets},
          {"losers", losers}};
}

std::string goodput_table(const nlohmann::json& report) {
  std::ostringstream out;
  double allocated = report["allocated_gpu_seconds"].get<double>();
  if (allocated <= 0) return "nothing accounted yet: the ledger fills as llmwatch watches runs\n";
  out << "allocated " << gpu_hours(allocated) << ", ETTR "
      << pct(report["ettr"].get<double>() * allocated, allocated) << "\n\n";
  out << "bucket        GPU-h        share\n";
  for (const char* b : kGoodputBuckets) {
    double s = report["gpu_seconds"][b].get<double>();
    if (s <= 0 && std::string(b) != "productive") continue;
    char line[96];
    std::snprintf(line, sizeof line, "%-12s  %-11s  %s\n", b, gpu_hours(s).c_str(),
                  std::string(b) == "queue" ? "(not allocated)" : pct(s, allocated).c_str());
    out << line;
  }
  const auto& losers = report["losers"];
  if (!losers.empty()) out << "\nlost, by " << report["by"].get<std::string>() << ":\n";
  int shown = 0;
  for (const auto& l : losers) {
    if (++shown > 10) break;
    out << "  " << l["key"].get<std::string>() << ": "
        << gpu_hours(l["lost_gpu_seconds"].get<double>()) << " across " << l["runs"].get<int>()
        << " run" << (l["runs"].get<int>() == 1 ? "" : "s");
    std::vector<std::pair<double, std::string>> causes;
    for (const auto& [c, s] : l["causes"].items()) causes.emplace_back(s.get<double>(), c);
    std::sort(causes.rbegin(), causes.rend());
    for (size_t i = 0; i < causes.size() && i < 3; ++i)
      out << (i ? ", " : " (") << causes[i].second << " " << gpu_hours(causes[i].first);
    out << (causes.empty() ? "" : ")") << "\n";
  }
  return out.str();
}

}  // namespace llmwatch

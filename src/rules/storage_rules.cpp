#include "rules/storage_rules.h"

#include <algorithm>
#include <cstdio>

#include "rules/forecast.h"
#include "util/units.h"

namespace llmwatch {
namespace {

std::string pct(double f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", f * 100);
  return buf;
}

}  // namespace

StorageFigures storage_figures(const StorageSettings& s, const StorageObservation& o,
                               const std::vector<std::pair<double, double>>& used_series) {
  StorageFigures f;
  double used = static_cast<double>(o.total_bytes - std::min(o.total_bytes, o.free_bytes));
  f.used_bytes = used;
  f.usable_bytes = static_cast<double>(o.total_bytes) * s.usable_fraction;
  f.total_inodes = static_cast<double>(o.total_inodes);
  f.used_inodes = static_cast<double>(o.total_inodes - std::min(o.total_inodes, o.free_inodes));
  f.rate_bytes_per_s = robust_rate(used_series);
  if (f.rate_bytes_per_s && *f.rate_bytes_per_s > 0) {
    double room = f.usable_bytes - used;
    if (o.quota && o.quota->limit_bytes)
      room = std::min(room, static_cast<double>(o.quota->limit_bytes) -
                                static_cast<double>(o.quota->used_bytes));
    f.seconds_to_full = std::max(0.0, room / *f.rate_bytes_per_s);
  }
  return f;
}

std::vector<Finding> evaluate_storage(const StorageSettings& s, const StorageObservation& o,
                                      const StorageFigures& f) {
  std::vector<Finding> out;
  auto make = [&](const std::string& kind, Severity sev, std::string summary) {
    Finding x =
        make_finding("storage:" + s.path, "storage:" + s.path, kind, sev, std::move(summary));
    x.evidence.push_back(s.path + ": " + format_size(static_cast<std::uint64_t>(f.used_bytes)) +
                         " used of " + format_size(o.total_bytes) + " (usable " +
                         format_size(static_cast<std::uint64_t>(f.usable_bytes)) + "), inodes " +
                         std::to_string(static_cast<long long>(f.used_inodes)) + " of " +
                         std::to_string(o.total_inodes));
    return x;
  };
  if (!o.ok()) {
    auto x = make("unknown", Severity::Unknown, "cannot measure " + s.path);
    x.evidence = {o.error};
    out.push_back(x);
    return out;
  }
  if (f.usable_bytes > 0) {
    double frac = f.used_bytes / f.usable_bytes;
    double free_left = f.usable_bytes - f.used_bytes;
    bool below_min = s.min_free > 0 && free_left < static_cast<double>(s.min_free);
    if (frac >= s.critical_used || below_min)
      out.push_back(make("space", Severity::Critical,
                         s.path + " is " + pct(frac) + " full of its usable capacity" +
                             (below_min ? ", below min_free " + format_size(s.min_free) : "")));
    else if (frac >= s.warn_used)
      out.push_back(make("space", Severity::Warning,
                         s.path + " is " + pct(frac) + " full of its usable capacity"));
  }
  if (f.total_inodes > 0) {
    double frac = f.used_inodes / f.total_inodes;
    if (frac >= std::max(s.warn_inodes_used, s.critical_used))
      out.push_back(
          make("inodes", Severity::Critical, s.path + " has used " + pct(frac) + " of its inodes"));
    else if (frac >= s.warn_inodes_used)
      out.push_back(
          make("inodes", Severity::Warning, s.path + " has used " + pct(frac) + " of its inodes"));
  }
  if (o.quota) {
    const auto& q = *o.quota;
    double frac =
        q.limit_bytes ? static_cast<double>(q.used_bytes) / static_cast<double>(q.limit_bytes) : 0;
    double ffrac =
        q.limit_files ? static_cast<double>(q.used_files) / static_cast<double>(q.limit_files) : 0;
    double worst = std::max(frac, ffrac);
    std::string what =
        std::string(ffrac > frac ? "file" : "space") + " quota on " + s.path + " is " + pct(worst) +
        " used" +
        (q.grace.empty() || q.grace == "-" || q.grace == "none" ? "" : ", grace " + q.grace);
    if (q.over || worst >= s.critical_used)
      out.push_back(make("quota", Severity::Critical, what + (q.over ? " (over quota)" : "")));
    else if (worst >= s.warn_used)
      out.push_back(make("quota", Severity::Warning, what));
  } else if (!o.quota_error.empty()) {
    auto x = make("quota-unknown", Severity::Unknown, "cannot read the quota of " + s.path);
    x.evidence = {o.quota_error};
    out.push_back(x);
  }
  if (f.seconds_to_full && *f.seconds_to_full < static_cast<double>(s.min_hours_left.count()))
    out.push_back(make("forecast", Severity::Warning,
                       s.path + " fills in ~" +
                           format_duration(Seconds(static_cast<long long>(*f.seconds_to_full))) +
                           " at the current rate (" +
                           format_size(static_cast<std::uint64_t>(*f.rate_bytes_per_s * 3600)) +
                           "/h)"));
  return out;
}

std::vector<Finding> evaluate_checkpoints(const StorageSettings& s, const StorageObservation& o,
                                          const StorageFigures& f, const CheckpointScan& scan) {
  std::vector<Finding> out;
  if (s.checkpoint_dir.empty() || !o.ok() || !scan.ok()) return out;
  const Checkpoint* last = nullptr;
  int complete = 0;
  for (const auto& c : scan.checkpoints)
    if (c.complete) ++complete, last = &c;
  std::string prefix = "storage:" + s.path;
  if (last) {
    double room = f.usable_bytes - f.used_bytes;
    if (o.quota && o.quota->limit_bytes)
      room = std::min(room, static_cast<double>(o.quota->limit_bytes) -
                                static_cast<double>(o.quota->used_bytes));
    if (static_cast<double>(last->bytes) > room) {
      auto x = make_finding(
          prefix, prefix, "checkpoint-wont-fit", Severity::Critical,
          "the next checkpoint (~" + format_size(last->bytes) + ") will not fit in the " +
              format_size(static_cast<std::uint64_t>(std::max(0.0, room))) + " left on " + s.path);
      x.evidence.push_back("last complete checkpoint: " + last->path);
      out.push_back(x);
    }
  }
  if (!scan.checkpoints.empty() && complete < 2)
    out.push_back(make_finding(prefix, prefix, "checkpoints-few", Severity::Warning,
                               std::to_string(complete) + " complete checkpoint(s) in " +
                                   s.checkpoint_dir +
                                   ": a failed save would leave nothing to resume from"));
  return out;
}

}  // namespace llmwatch

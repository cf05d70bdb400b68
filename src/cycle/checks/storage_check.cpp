// Storage: every [[storage]] path is probed at once (statvfs and quota, each with its own
// deadline), its series recorded, and judged for space, inodes, quota, the growth forecast
// and checkpoints. Each path is its own failure domain. Deleting old checkpoints is not
// decided here: the act phase does it.
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cycle/check.h"
#include "cycle/failure_domain.h"
#include "probes/checkpoints.h"
#include "probes/storage_probe.h"
#include "rules/storage_rules.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/deadline_call.h"
#include "util/text.h"

namespace llmwatch {
namespace {

class StorageCheck : public Check {
 public:
  std::string name() const override { return "storage"; }
  int stage() const override { return 0; }
  bool enabled(const CycleState& s) const override { return !s.config.storage.empty(); }

  void observe(CycleState& s) override {
    const auto& all = s.config.storage;
    seen_.assign(all.size(), {});
    seconds_.assign(all.size(), 0);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < all.size(); ++i)
      threads.emplace_back([&, i] {
        auto t0 = std::chrono::steady_clock::now();
        Status probed = run_guarded("storage:" + all[i].path, [&] {
          seen_[i] = probe_storage(
              all[i], std::chrono::duration_cast<std::chrono::milliseconds>(s.config.file_timeout));
        });
        if (!probed) seen_[i].error = probed.error();
        seen_[i].path = all[i].path;
        seconds_[i] = seconds_since(t0);
      });
    for (auto& t : threads) t.join();
  }

  CheckReport judge(CycleState& s) override {
    CheckReport r;
    for (size_t i = 0; i < s.config.storage.size(); ++i) {
      const auto& settings = s.config.storage[i];
      const StorageObservation& o = seen_[i];
      bool ok = o.ok() && o.quota_error.empty();
      Status judged = run_guarded("storage:" + settings.path, [&] { judge_one(s, i, r); });
      if (!judged) {
        ok = false;
        Finding f = make_finding("storage:" + settings.path, settings.path, "unknown",
                                 Severity::Unknown, "cannot judge " + settings.path);
        f.evidence.push_back(judged.error());
        r.findings.push_back(std::move(f));
      }
      if (!ok) ++r.unknown;
      r.probes.push_back({"storage:" + settings.path, ok, seconds_[i]});
    }
    return r;
  }

 private:
  void judge_one(CycleState& s, size_t i, CheckReport& r) {
    const auto& settings = s.config.storage[i];
    const StorageObservation& o = seen_[i];
    const std::string prefix = "storage:" + settings.path;
    StorageFigures f;
    if (o.ok()) {
      f = storage_figures(settings, o, {});
      s.store.add_storage_sample(settings.path, s.now,
                                 {f.used_bytes, f.usable_bytes, f.used_inodes, f.total_inodes});
      f = storage_figures(settings, o, s.store.storage_used_series(settings.path, s.now - 86400.0));
      for (const char* kind : {"/space", "/inodes", "/forecast", "/unknown"})
        r.scopes.push_back(prefix + kind);
      if (o.quota_error.empty()) r.scopes.push_back(prefix + "/quota");
      nlohmann::json snap = {{"used_bytes", f.used_bytes},
                             {"usable_bytes", f.usable_bytes},
                             {"total_bytes", o.total_bytes},
                             {"used_inodes", f.used_inodes},
                             {"total_inodes", f.total_inodes}};
      if (f.seconds_to_full) snap["seconds_to_full"] = *f.seconds_to_full;
      if (o.quota)
        snap["quota"] = {{"used_bytes", o.quota->used_bytes},
                         {"limit_bytes", o.quota->limit_bytes}};
      s.snapshots.emplace_back(kv::storage(settings.path), json_dump(snap));
    }
    auto findings = evaluate_storage(settings, o, f);
    if (!settings.checkpoint_dir.empty() && o.ok()) {
      // A listing of a directory on a hung mount blocks in the kernel: bounded, like statvfs.
      auto call = call_with_deadline<CheckpointScan>(
          "scan " + settings.checkpoint_dir,
          std::chrono::duration_cast<std::chrono::milliseconds>(s.config.file_timeout),
          [dir = settings.checkpoint_dir, glob = settings.checkpoint_glob, now = s.now] {
            return scan_checkpoints(dir, glob, now);
          });
      CheckpointScan scan = call.value.value_or(CheckpointScan{{}, call.error});
      auto ckpt = evaluate_checkpoints(settings, o, f, scan);
      findings.insert(findings.end(), ckpt.begin(), ckpt.end());
      // A scan that failed saw nothing: its findings must not resolve, nor anything be deleted.
      if (scan.ok()) {
        r.scopes.push_back(prefix + "/checkpoint");
        s.cleanups.push_back({&settings, std::move(scan)});
      }
    }
    r.findings.insert(r.findings.end(), findings.begin(), findings.end());
  }

  std::vector<StorageObservation> seen_;
  std::vector<double> seconds_;
};

LLMWATCH_REGISTER_CHECK(StorageCheck);

}  // namespace
}  // namespace llmwatch

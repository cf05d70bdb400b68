// [[check]] where = "here": the operator's own Nagios-style plugins (a Lustre health script, a
// license server probe, check_nrpe ...), run on llmwatch's host at most every `every`, each
// with its own deadline and in its own thread (probes/nagios_plugin.h: the exit status is the
// verdict; a timeout, a crash or a program that cannot run is UNKNOWN, which never acts).
// Between runs the last verdict stands: the check's scope is covered only in a cycle in which
// it ran, so a finding neither resolves nor repeats on a cycle that did not look.
#include <thread>

#include "cycle/check.h"
#include "probes/nagios_plugin.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

Severity severity_of(int nagios_code) {
  switch (nagios_code) {
    case 1:
      return Severity::Warning;
    case 2:
      return Severity::Critical;
    default:
      return Severity::Unknown;
  }
}

class CommandCheck : public Check {
 public:
  std::string name() const override { return "command"; }
  int stage() const override { return 0; }
  bool enabled(const CycleState& s) const override {
    for (const auto& k : s.config.checks)
      if (k.where == "here") return true;
    return false;  // where = "nodes" checks are node-check's (probes/nagios_plugin.h)
  }

  void prepare(CycleState& s) override {
    const auto& all = s.config.checks;
    due_.assign(all.size(), false);
    results_.assign(all.size(), {});
    for (size_t i = 0; i < all.size(); ++i) {
      double last = static_cast<double>(
          to_int64(s.store.get(kv::command_check(all[i].name)).value_or("")).value_or(0));
      // A clock that went back makes the last run "in the future": run now.
      due_[i] = all[i].where == "here" &&
                (s.now - last >= static_cast<double>(all[i].every.count()) || last > s.now);
    }
  }

  void observe(CycleState& s) override {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < s.config.checks.size(); ++i)
      if (due_[i]) threads.emplace_back([&, i] { results_[i] = run_plugin(s.config.checks[i]); });
    for (auto& t : threads) t.join();
  }

  CheckReport judge(CycleState& s) override {
    CheckReport r;
    for (size_t i = 0; i < s.config.checks.size(); ++i) {
      if (!due_[i]) continue;
      const auto& k = s.config.checks[i];
      const PluginAnswer& a = results_[i];
      s.store.put(kv::command_check(k.name), std::to_string(static_cast<long long>(s.now)), s.now);
      r.scopes.push_back("check:" + k.name + "/");
      r.probes.push_back({"check:" + k.name, a.code != 3, a.seconds});
      if (a.code == 0) continue;
      Severity severity = severity_of(a.code);
      if (severity == Severity::Unknown) ++r.unknown;
      Finding f = make_finding("check:" + k.name, k.name, "status", severity, a.summary);
      f.evidence = a.detail;
      r.findings.push_back(std::move(f));
    }
    return r;
  }

 private:
  std::vector<bool> due_;
  std::vector<PluginAnswer> results_;
};

LLMWATCH_REGISTER_CHECK(CommandCheck);

}  // namespace
}  // namespace llmwatch

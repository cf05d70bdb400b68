// [[check]]: the operator's own Nagios-style plugins (a Lustre health script, a license
// server probe, check_nrpe ...), run on llmwatch's host at most every `every`, each with its
// own deadline and in its own thread. The exit status is the verdict (0 OK, 1 WARNING,
// 2 CRITICAL, 3 UNKNOWN); a timeout, a crash or a program that cannot run is UNKNOWN, which
// never acts. Between runs the last verdict stands: the check's scope is covered only in a
// cycle in which it ran, so a finding neither resolves nor repeats on a cycle that did not look.
#include <thread>

#include "cycle/check.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace llmwatch {
namespace {

// The Nagios verdict of one run: its finding's severity, or none when it passed.
std::optional<Severity> verdict_of(const ProcessResult& r) {
  if (!r.started || r.timed_out || r.signal != 0) return Severity::Unknown;
  switch (r.exit_code) {
    case 0:
      return std::nullopt;
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
  bool enabled(const CycleState& s) const override { return !s.config.checks.empty(); }

  void prepare(CycleState& s) override {
    const auto& all = s.config.checks;
    due_.assign(all.size(), false);
    results_.assign(all.size(), {});
    for (size_t i = 0; i < all.size(); ++i) {
      double last = static_cast<double>(
          to_int64(s.store.get(kv::command_check(all[i].name)).value_or("")).value_or(0));
      // A clock that went back makes the last run "in the future": run now.
      due_[i] = s.now - last >= static_cast<double>(all[i].every.count()) || last > s.now;
    }
  }

  void observe(CycleState& s) override {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < s.config.checks.size(); ++i)
      if (due_[i])
        threads.emplace_back([&, i] {
          const auto& k = s.config.checks[i];
          ProcessSpec spec;
          spec.argv = k.command;
          spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(k.timeout);
          spec.max_output = 64 << 10;
          results_[i] = run_process(spec);
        });
    for (auto& t : threads) t.join();
  }

  CheckReport judge(CycleState& s) override {
    CheckReport r;
    for (size_t i = 0; i < s.config.checks.size(); ++i) {
      if (!due_[i]) continue;
      const auto& k = s.config.checks[i];
      const ProcessResult& res = results_[i];
      s.store.put(kv::command_check(k.name), std::to_string(static_cast<long long>(s.now)), s.now);
      r.scopes.push_back("check:" + k.name + "/");
      auto severity = verdict_of(res);
      r.probes.push_back({"check:" + k.name, severity != Severity::Unknown, res.seconds});
      if (!severity) continue;
      if (*severity == Severity::Unknown) ++r.unknown;
      // Nagios plugins print "STATUS - text | perfdata" first; the rest is detail.
      auto lines = split(res.out, '\n');
      std::string first = lines.empty() ? "" : std::string(trim(lines[0]));
      first = first.substr(0, first.find(" | "));
      std::string summary = res.timed_out || !res.started || res.signal
                                ? res.describe(k.command[0])
                                : (first.empty() ? "exit " + std::to_string(res.exit_code) : first);
      Finding f =
          make_finding("check:" + k.name, k.name, "status", *severity, sanitize_line(summary, 200));
      for (size_t l = 1; l < lines.size() && f.evidence.size() < 10; ++l)
        if (!trim(lines[l]).empty()) f.evidence.push_back(sanitize_line(trim(lines[l]), 300));
      if (!res.err.empty()) f.evidence.push_back("stderr: " + sanitize_line(trim(res.err), 300));
      r.findings.push_back(std::move(f));
    }
    return r;
  }

 private:
  std::vector<bool> due_;
  std::vector<ProcessResult> results_;
};

LLMWATCH_REGISTER_CHECK(CommandCheck);

}  // namespace
}  // namespace llmwatch

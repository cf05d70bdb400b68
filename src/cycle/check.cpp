#include "cycle/check.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <map>

#include "cycle/failure_domain.h"

namespace llmwatch {
namespace {

std::vector<CheckFactory>& factories() {
  static std::vector<CheckFactory> all;  // function-local: safe from initialization order
  return all;
}

struct Running {
  std::unique_ptr<Check> check;
  std::string error;
  double seconds = 0;
};

void merge(CycleState& state, Running& r, CheckReport report) {
  std::string name = r.check->name();
  if (!r.error.empty()) {
    ++state.result.unknown_probes;
    state.result.probes.push_back({name, false, r.seconds});
    Finding f = make_finding("check:" + name, "llmwatch", "failed", Severity::Unknown,
                             "the " + name + " check failed; what it covers is unknown");
    f.evidence.push_back(r.error);
    state.findings.push_back(std::move(f));
    return;  // no scopes: nothing it covers resolves on a cycle that did not look
  }
  state.scopes.push_back("check:" + name + "/");
  state.scopes.insert(state.scopes.end(), report.scopes.begin(), report.scopes.end());
  state.findings.insert(state.findings.end(), report.findings.begin(), report.findings.end());
  state.result.unknown_probes += report.unknown;
  if (report.probes.empty())
    state.result.probes.push_back({name, report.unknown == 0, r.seconds});
  else
    state.result.probes.insert(state.result.probes.end(), report.probes.begin(),
                               report.probes.end());
}

}  // namespace

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool register_check(CheckFactory factory) {
  factories().push_back(std::move(factory));
  return true;
}

std::vector<std::unique_ptr<Check>> make_checks() {
  std::vector<std::unique_ptr<Check>> out;
  for (const auto& f : factories()) out.push_back(f());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a->stage() != b->stage() ? a->stage() < b->stage() : a->name() < b->name();
  });
  return out;
}

std::vector<std::string> check_names() {
  std::vector<std::string> out;
  for (const auto& c : make_checks()) out.push_back(c->name());
  return out;
}

void run_checks(CycleState& state) {
  std::map<int, std::vector<std::unique_ptr<Check>>> stages;
  for (auto& c : make_checks()) stages[c->stage()].push_back(std::move(c));
  for (auto& [stage, all] : stages) {
    // Asked only now: whether a check can run depends on what earlier stages observed.
    std::vector<Running> checks;
    for (auto& c : all)
      if (c->enabled(state)) checks.push_back({std::move(c), "", 0});
    for (auto& r : checks) {
      auto t0 = std::chrono::steady_clock::now();
      r.error = run_guarded(r.check->name(), [&] { r.check->prepare(state); }).error();
      r.seconds += seconds_since(t0);
    }
    {
      boost::asio::thread_pool pool(std::max<size_t>(1, checks.size()));
      for (auto& r : checks) {
        if (!r.error.empty()) continue;
        boost::asio::post(pool, [&r, &state] {
          auto t0 = std::chrono::steady_clock::now();
          r.error = run_guarded(r.check->name(), [&] { r.check->observe(state); }).error();
          r.seconds += seconds_since(t0);
        });
      }
      pool.join();
    }
    for (auto& r : checks) {
      CheckReport report;
      if (r.error.empty()) {
        auto t0 = std::chrono::steady_clock::now();
        r.error = run_guarded(r.check->name(), [&] { report = r.check->judge(state); }).error();
        r.seconds += seconds_since(t0);
      }
      merge(state, r, std::move(report));
    }
  }
}

}  // namespace llmwatch

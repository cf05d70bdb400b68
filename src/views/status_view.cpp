#include "views/status_view.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <sstream>

#include "rules/job_progress.h"
#include "rules/job_rules.h"
#include "store/keys.h"
#include "store/lease.h"
#include "store/store.h"
#include "util/paths.h"
#include "util/units.h"
#include "views/goodput_view.h"
#include "views/job_view.h"

namespace llmwatch {

nlohmann::json build_status(const Config& config, Store& store, double now) {
  using nlohmann::json;
  json s = {{"schema", "llmwatch.status/1"}, {"now", now}, {"dry_run", config.dry_run}};
  json self = {{"state_dir", config.state_dir}};
  auto hb = json::parse(store.get(kv::kHeartbeat).value_or("{}"), nullptr, false);
  if (hb.is_object() && hb.contains("ts")) {
    self["last_cycle"] = hb["ts"];
    self["last_cycle_age_s"] = now - hb["ts"].get<double>();
    self["last_cycle_host"] = hb.value("host", "");
  }
  auto lease = Lease::read(config.state_dir);
  if (lease) self["lease"] = lease->str();
  // A next cycle is due only where something runs them: a daemon (its lease is there, held,
  // or left expired by one that died: then the cycle is overdue), or the self-perpetuating
  // chain. A lone `run --once` gives its lease back (#27: status then said "next in 2s").
  bool scheduled = lease || store.get(kv::kSelfChain).value_or("off") == "on";
  if (hb.is_object() && hb.contains("ts") && scheduled)
    self["next_cycle_in_s"] =
        hb["ts"].get<double>() + static_cast<double>(config.interval.count()) - now;
  // Supervising, or not? A status older than two intervals (of the daemon, or of the
  // self-perpetuating job when its chain is on), or a lease whose holder died on this host,
  // means nobody is watching: everything below is history, and must say so.
  double interval = static_cast<double>(config.interval.count());
  if (store.get(kv::kSelfChain).value_or("off") == "on")
    interval = std::strtod(
        store.get(kv::kSelfInterval).value_or(std::to_string(config.self.interval.count())).c_str(),
        nullptr);
  self["interval_s"] = interval;
  std::string stale;
  if (!self.contains("last_cycle"))
    stale = "no cycle has run";
  else if (self["last_cycle_age_s"].get<double>() > 2 * interval)
    stale =
        "last cycle " +
        format_duration(Seconds(static_cast<long long>(self["last_cycle_age_s"].get<double>()))) +
        " ago on " + self.value("last_cycle_host", std::string("?")) + " (interval " +
        format_duration(Seconds(static_cast<long long>(interval))) + ")";
  else if (lease && lease->host == hostname() && ::kill(lease->pid, 0) != 0 && errno == ESRCH)
    stale = "the lease holder " + lease->str() + " is gone";
  self["supervising"] = stale.empty();
  if (!stale.empty()) self["not_supervising"] = stale;
  self["chain"] = store.get(kv::kSelfChain).value_or("off");
  if (auto succ = store.get(kv::kSelfSuccessor)) self["successor_job"] = *succ;
  s["llmwatch"] = self;

  json jobs = json::array();
  for (const auto& job : config.jobs) {
    std::string label = job_label(job);
    JobProgress p = store.progress(label);
    auto view = json::parse(store.get(kv::job_view(label)).value_or("{}"), nullptr, false);
    json j = {{"name", label}, {"task", p.task}, {"log", p.log_path}};
    j["entries"] = view.is_object() && view.contains("entries") ? view["entries"] : json::array();
    if (p.step) j["step"] = *p.step;
    if (p.best_step >= 0) j["best_step"] = p.best_step;
    if (p.max_steps) j["max_steps"] = *p.max_steps;
    if (p.step_time) j["step_time_s"] = *p.step_time;
    if (p.loss) j["loss"] = *p.loss;
    if (p.last_progress > 0) j["seconds_since_progress"] = now - p.last_progress;
    StaleVerdict v = evaluate_stale(p, job, now);
    j["figures"] = job_figures(job, p, now);
    j["restarts"] = store.count_actions("restart", label, 0);
    j["phase"] = v.phase;
    j["allowance_s"] = v.allowance;
    j["allowance_how"] = v.how;
    jobs.push_back(j);
  }
  s["jobs"] = jobs;
  // The fleet's goodput over 30 days, from the same ledger as `llmwatch goodput` (#29).
  auto ledger = GoodputLedger(store).rows(now - 30 * 86400.0);
  if (auto line = goodput_line(goodput_totals(ledger), "30d"); !line.empty()) s["goodput"] = line;

  json findings = json::array();
  for (const auto& row : store.firing())
    findings.push_back({{"key", row.key},
                        {"severity", row.severity},
                        {"summary", row.summary},
                        {"since", row.first_seen},
                        {"evidence", json::parse(row.evidence_json, nullptr, false)}});
  s["findings"] = findings;

  json storage = json::array();
  for (const auto& st : config.storage) {
    auto snap = json::parse(store.get(kv::storage(st.path)).value_or("{}"), nullptr, false);
    if (snap.is_object() && snap.contains("used_bytes")) {
      snap["path"] = st.path;
      storage.push_back(snap);
    }
  }
  s["storage"] = storage;
  auto nodes = json::parse(store.get(kv::kNodes).value_or("{}"), nullptr, false);
  s["nodes"] = nodes.is_object() ? nodes.value("attention", json::array()) : json::array();

  json actions = json::array();
  for (const auto& a : store.recent_actions(8))
    actions.push_back({{"ts", a.started},
                       {"kind", a.kind},
                       {"subject", a.subject},
                       {"state", a.state},
                       {"detail", a.detail}});
  s["recent_actions"] = actions;
  return s;
}

namespace {

std::string ago(double seconds) {
  if (seconds < 0) return "in " + format_duration(Seconds(static_cast<long long>(-seconds)));
  return format_duration(Seconds(static_cast<long long>(seconds))) + " ago";
}

struct Painter {
  bool on;
  std::string operator()(const std::string& text, const char* code) const {
    return on ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
  }
};

}  // namespace

std::string render_status(const nlohmann::json& s, bool color) {
  Painter paint{color};
  std::ostringstream out;
  double now = s["now"].get<double>();
  const auto& self = s["llmwatch"];
  // Stale data must never pass for current: the banner comes first, every section says when.
  std::string as_of;
  if (self.contains("not_supervising")) {
    out << paint("NOT SUPERVISING — " + self["not_supervising"].get<std::string>(), "1;31") << "\n";
    as_of = self.contains("last_cycle_age_s")
                ? " (as of " + ago(self["last_cycle_age_s"].get<double>()) + ")"
                : " (never observed)";
  }
  out << paint("llmwatch", "1") << (s["dry_run"].get<bool>() ? paint("  [DRY RUN]", "33") : "")
      << "\n";
  if (self.contains("last_cycle")) {
    std::string next = "; no next cycle scheduled (no daemon, no chain)";
    if (self.contains("next_cycle_in_s")) {
      double in = self["next_cycle_in_s"].get<double>();
      next = in >= 0
                 ? ", next " + ago(-in)
                 : ", next " + paint("overdue by " + ago(-in).substr(0, ago(-in).size() - 4), "31");
    }
    out << "  last cycle   " << ago(self["last_cycle_age_s"].get<double>()) << " on "
        << self["last_cycle_host"].get<std::string>() << next << "\n";
  } else {
    out << "  last cycle   " << paint("never", "33") << "\n";
  }
  if (self.contains("lease")) out << "  lease        " << self["lease"].get<std::string>() << "\n";
  out << "  chain        " << self["chain"].get<std::string>();
  if (self.contains("successor_job"))
    out << " (queued successor: job " << self["successor_job"].get<std::string>() << ")";
  if (s.contains("goodput")) out << "\n  " << s["goodput"].get<std::string>();
  out << "\n\n" << paint("Jobs", "1") << as_of << "\n";
  if (s["jobs"].empty()) out << "  (no [[job]] configured)\n";
  for (const auto& j : s["jobs"]) {
    std::string state = "absent";
    for (const auto& e : j["entries"]) {
      state = e["id"].get<std::string>() + " " + e["state"].get<std::string>();
      if (e["state"] == "RUNNING") break;
      // Why it waits, as squeue says it: "3 PENDING (launch failed requeued held)".
      std::string reason = e.value("reason", "");
      if (!reason.empty() && reason != "None") state += " (" + reason + ")";
    }
    out << "  " << paint(j["name"].get<std::string>(), "1") << "  " << state;
    // The step of the max only beside a step: a new task before its first step printed
    // "2 RUNNING/1000" (#27).
    if (j.contains("step")) {
      out << "  step " << j["step"].get<long long>();
      if (j.contains("max_steps")) out << "/" << j["max_steps"].get<long long>();
    } else if (j.contains("max_steps")) {
      out << "  no step yet (of " << j["max_steps"].get<long long>() << ")";
    }
    if (j.contains("step_time_s")) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "  %.2fs/step", j["step_time_s"].get<double>());
      out << buf;
    }
    if (j.contains("figures")) {
      const auto& f = j["figures"];
      char buf[64];
      if (f.contains("tokens_per_s")) {
        std::snprintf(buf, sizeof buf, "  %.0f tok/s", f["tokens_per_s"].get<double>());
        out << buf;
      }
      if (f.contains("mfu")) {
        std::snprintf(buf, sizeof buf, "  MFU %.1f%%", f["mfu"].get<double>() * 100);
        out << buf;
      }
      if (f.contains("loss")) {
        std::snprintf(buf, sizeof buf, "  loss %.4g", f["loss"].get<double>());
        out << buf;
      }
      if (f.contains("eta_s"))
        out << "  ETA "
            << format_duration(Seconds(static_cast<long long>(f["eta_s"].get<double>())));
      if (color && f.contains("recent_step_times") && !f["recent_step_times"].empty()) {
        std::vector<double> recent;
        for (const auto& v : f["recent_step_times"]) recent.push_back(v.get<double>());
        out << "  " << sparkline(recent, 12);
      }
    }
    if (j.contains("figures") && j["figures"].contains("last_checkpoint_age_s"))
      out << "  ckpt " << ago(j["figures"]["last_checkpoint_age_s"].get<double>());
    if (j.value("restarts", 0) > 0) out << "  restarts " << j["restarts"].get<int>();
    if (j.contains("seconds_since_progress"))
      out << "  progress " << ago(j["seconds_since_progress"].get<double>()) << " (allowed "
          << format_duration(Seconds(static_cast<long long>(j["allowance_s"].get<double>())))
          << " in " << j["phase"].get<std::string>() << ": " << j.value("allowance_how", "") << ")";
    out << "\n";
  }
  if (s.contains("storage") && !s["storage"].empty()) {
    out << "\n" << paint("Storage", "1") << as_of << "\n";
    for (const auto& st : s["storage"]) {
      double usable = st["usable_bytes"].get<double>();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f%%",
                    usable > 0 ? st["used_bytes"].get<double>() / usable * 100 : 0);
      out << "  " << st["path"].get<std::string>() << "  " << buf << " of "
          << format_size(static_cast<std::uint64_t>(usable)) << " usable";
      if (st.value("total_inodes", 0.0) > 0) {
        std::snprintf(buf, sizeof buf, "  inodes %.0f%%",
                      st["used_inodes"].get<double>() / st["total_inodes"].get<double>() * 100);
        out << buf;
      }
      if (st.contains("seconds_to_full"))
        out << "  full in ~"
            << format_duration(
                   Seconds(static_cast<long long>(st["seconds_to_full"].get<double>())));
      out << "\n";
    }
  }
  if (s.contains("nodes") && !s["nodes"].empty()) {
    out << "\n" << paint("Nodes needing attention", "1") << as_of << "\n";
    for (const auto& n : s["nodes"])
      out << "  " << n.value("name", "") << "  " << n.value("state", "") << "  "
          << n.value("reason", "") << "\n";
  }
  out << "\n" << paint("Firing", "1") << as_of << "\n";
  if (s["findings"].empty()) out << "  " << paint("nothing firing", "32") << "\n";
  for (const auto& f : s["findings"]) {
    std::string sev = f["severity"];
    const char* code = sev == "critical" ? "31" : sev == "warning" ? "33" : "36";
    out << "  " << paint(sev, code) << "  " << f["key"].get<std::string>() << " — "
        << f["summary"].get<std::string>() << " (since " << ago(now - f["since"].get<double>())
        << ")\n";
  }
  out << "\n" << paint("Recent actions", "1") << "\n";
  if (s["recent_actions"].empty()) out << "  none\n";
  for (const auto& a : s["recent_actions"])
    out << "  " << ago(now - a["ts"].get<double>()) << "  " << a["kind"].get<std::string>() << " "
        << a["subject"].get<std::string>() << ": " << a["state"].get<std::string>() << " — "
        << a["detail"].get<std::string>() << "\n";
  return out.str();
}

StatusCheck check_status(const nlohmann::json& s) {
  const auto& self = s["llmwatch"];
  if (self.contains("not_supervising"))
    return {3, "LLMWATCH UNKNOWN - not supervising: " + self["not_supervising"].get<std::string>()};
  int critical = 0, warning = 0;
  std::string first;
  for (const auto& f : s["findings"]) {
    std::string sev = f.value("severity", "");
    if (sev == "critical") ++critical;
    if (sev == "warning" || sev == "unknown") ++warning;
    if ((sev == "critical" || sev == "warning") && first.empty())
      first = f.value("key", "") + ": " + f.value("summary", "");
  }
  std::string jobs = std::to_string(s["jobs"].size()) + " job(s) watched";
  if (critical)
    return {2, "LLMWATCH CRITICAL - " + std::to_string(critical) + " critical, " +
                   std::to_string(warning) + " warning firing; " + first};
  if (warning)
    return {1, "LLMWATCH WARNING - " + std::to_string(warning) + " warning firing; " + first};
  return {0, "LLMWATCH OK - " + jobs + ", nothing firing"};
}

}  // namespace llmwatch

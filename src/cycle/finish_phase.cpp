#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "cycle/checks/node_history.h"
#include "cycle/failure_domain.h"
#include "cycle/housekeeping.h"
#include "cycle/phases.h"
#include "rules/job_rules.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/http.h"
#include "util/json_writer.h"
#include "util/paths.h"
#include "util/text.h"
#include "views/metrics.h"

namespace llmwatch {

void finish_phase(CycleState& s) {
  CycleResult& result = s.result;
  result.findings = s.findings;
  result.finished = std::max(unix_now(), s.now);
  // Each step below is independent: a full disk that fails the heartbeat must not stop
  // the metrics file or the dead-man ping. The heartbeat tells the errors before it in the
  // history; one after it is told there as it happens.
  bool told = false;
  auto error = [&](std::string what) {
    s.errors.push_back(std::move(what));
    if (told) s.store.add_event(s.now, "error", "llmwatch", "warning", s.errors.back());
  };
  auto step = [&](const char* what, auto&& fn) {
    if (Status done = run_guarded(what, fn); !done) error(done.error());
  };
  step("cycle record", [&] {
    s.store.record_cycle(s.now, result.finished, hostname(), static_cast<int>(getpid()),
                         static_cast<int>(s.findings.size()), result.actions,
                         result.unknown_probes);
  });
  step("heartbeat", [&] {
    // Written by hand (util/json_writer.h): at 1,000 watched jobs it lists 1,000 log probes,
    // and building it as a JSON tree was a tenth of the cycle.
    JsonWriter hb;
    hb.begin_object();
    hb.key("ts").value(s.now);
    hb.key("duration").value(result.finished - s.now);
    hb.key("host").value(hostname());
    hb.key("pid").value(static_cast<std::int64_t>(getpid()));
    hb.key("findings").value(static_cast<std::uint64_t>(s.findings.size()));
    hb.key("unknown_probes").value(result.unknown_probes);
    hb.key("probes").begin_array();
    for (const auto& p : result.probes)
      hb.begin_object()
          .key("name")
          .value(p.name)
          .key("ok")
          .value(p.ok)
          .key("seconds")
          .value(p.seconds)
          .end_object();
    hb.end_array();
    if (!s.errors.empty()) {
      hb.key("errors").begin_array();
      for (const auto& e : s.errors) hb.value(e);
      hb.end_array();
    }
    s.store.put(kv::kHeartbeat, hb.end_object().take(), s.now);
    for (const auto& e : s.errors) s.store.add_event(s.now, "error", "llmwatch", "warning", e);
    told = true;
  });
  step("own logs",
       [&] { remove_old_own_logs(s.config.state_dir, s.config.self.log_max_age, s.now); });
  // Bounded state: once an hour, drop history older than keep_history.
  step("compaction", [&] {
    double compacted = std::strtod(s.store.get(kv::kCompactedAt).value_or("0").c_str(), nullptr);
    if (s.now - compacted >= 3600) {
      // The progress series is kept whole for a day (what the views show of recent failures),
      // then a row per job per 10 minutes.
      const double before = s.now - static_cast<double>(s.config.keep_history.count());
      s.store.compact(before, s.now - 86400);
      // A [[job]] no longer configured: its state goes once it is as old as the history.
      const auto labels = configured_labels(s.config);
      s.store.forget_jobs(labels, before);
      remove_unnamed_kept_scripts(s.config.state_dir, s.store, labels);
      // A node no watched task runs on any more: its GPU telemetry series is no one's evidence
      // (cycle/checks/node_history.h). Not on a cycle that could not see the queue.
      if (s.queue_ok()) s.store.forget_telemetry(watched_nodes(running_tasks(s.work)));
      s.store.put(kv::kCompactedAt, std::to_string(s.now), s.now);
    }
  });
  // Its failure is the cycle's error: node_exporter would go on serving the last file written.
  if (!s.config.metrics_file.empty())
    step("metrics file", [&] {
      auto written = write_metrics_file(s.config.metrics_file, s.config, s.store, result.finished);
      if (!written) error("metrics file: " + written.error());
    });
  if (!s.config.self.deadman_url.empty())
    step("dead-man ping", [&] {
      auto r = http_request("GET", s.config.self.deadman_url, "", {}, Seconds(10));
      if (!r.ok())
        s.store.add_event(s.now, "deadman", "llmwatch", "warning",
                          "dead-man ping failed: " + r.error);
    });
}

}  // namespace llmwatch

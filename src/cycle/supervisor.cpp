#include "cycle/supervisor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "alert/notifier.h"
#include "cycle/executor.h"
#include "cycle/housekeeping.h"
#include "cycle/node_health_step.h"
#include "cycle/self_chain.h"
#include "policy/policy.h"
#include "probes/job_logs.h"
#include "probes/log_tail.h"
#include "probes/storage_probe.h"
#include "rules/job_rules.h"
#include "rules/storage_rules.h"
#include "slurm/hostlist.h"
#include "store/store.h"
#include "util/http.h"
#include "util/paths.h"
#include "views/metrics.h"

namespace llmwatch {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

// Everything one watched job needs this cycle, filled by the log probe in a worker thread.
struct JobWork {
  const JobSettings* settings;
  std::string label;
  JobObservation obs;
  JobProgress progress;
  std::vector<std::pair<std::int64_t, double>> advances;
  std::uint64_t bytes = 0;
  std::optional<SlurmJob> last;  // the last run seen, for restarting a job that is gone
};

void fill_from_scontrol(SlurmJob& task, SlurmClient& slurm, const std::optional<SlurmJob>& last) {
  if (last && last->display_id() == task.display_id()) {
    task = *last;  // scontrol was already asked when this task was first seen
    return;
  }
  auto show = slurm.show_job(task.display_id());
  if (show.empty()) return;
  task.std_out = show["StdOut"];
  task.std_err = show["StdErr"];
  task.command = show["Command"];
  task.workdir = show["WorkDir"];
  if (show["Account"] != "(null)") task.account = show["Account"];
  task.partition = show["Partition"];
}

std::optional<double> file_age(const std::string& path, double now) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
  return now - static_cast<double>(st.st_mtime);
}

void probe_job_log(JobWork& w, double now) {
  w.obs.kill_switch_age = file_age(w.settings->kill_switch, now);
  w.obs.save_switch_age = file_age(w.settings->save_switch, now);
  if (!w.obs.running) {
    // The task we followed is gone and nothing runs: it ended (a quick death if no step).
    bool still_queued = false;
    for (const auto& e : w.obs.entries) still_queued |= e.display_id() == w.progress.task;
    if (!still_queued) task_ended(w.progress);
    return;
  }
  const SlurmJob& task = *w.obs.running;
  auto paths = log_paths_for(*w.settings, task);
  std::string label;
  for (const auto& p : paths) label += (label.empty() ? "" : " ") + p;
  if (w.progress.task != task.display_id()) {
    task_ended(w.progress);
    double started = task.start_time > 0 ? static_cast<double>(task.start_time) : now;
    start_task(w.progress, task.display_id(), label, std::min(started, now));
  }
  w.progress.log_path = label;
  TrainingLogParser parser(w.settings->progress_regex);
  std::string errors;
  size_t readable = 0;
  for (const auto& path : paths) {
    LogChunk chunk = read_appended(path, w.progress.cursors[path]);
    if (!chunk.error.empty()) {
      errors += (errors.empty() ? "" : "; ") + chunk.error;
      w.progress.cursors.erase(path);
      continue;
    }
    ++readable;
    w.bytes += chunk.bytes_read;
    w.progress.bytes_read += chunk.bytes_read;
    auto advances = apply_lines(w.progress, chunk.lines, parser, now);
    w.advances.insert(w.advances.end(), advances.begin(), advances.end());
  }
  // No output yet is normal while a job starts up; after that it is "cannot tell".
  if ((readable == 0) &&
      now - w.progress.task_seen > static_cast<double>(w.settings->startup_grace.count()))
    w.obs.log_error = errors.empty() ? "no log file matches " + label : errors;
}

}  // namespace

CycleResult Supervisor::run_cycle(double now) {
  CycleResult result;
  result.started = now;
  std::vector<Finding> findings;
  std::vector<std::string> scopes;  // finding-key prefixes that were fully evaluated

  // --- probes: Slurm queue (one squeue per cycle, whatever the number of jobs); only the
  // watched jobs and llmwatch's own are kept from it ---
  JobFilter filter;
  filter.names.insert(config_.self.job_name);
  for (const auto& job : config_.jobs) {
    if (job.id)
      filter.ids.insert(*job.id);
    else
      filter.names.insert(job.name);
  }
  slurm_.set_filter(std::move(filter));
  boost::asio::thread_pool pool(4);
  std::promise<SqueueParse> queue_promise;
  std::promise<SinfoParse> nodes_promise;
  auto queue_future = queue_promise.get_future();
  auto nodes_future = nodes_promise.get_future();
  double squeue_s = 0, sinfo_s = 0;
  auto timed = [](double& seconds, auto&& fn) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = fn();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  boost::asio::post(
      pool, [&] { queue_promise.set_value(timed(squeue_s, [&] { return slurm_.queue(); })); });
  boost::asio::post(
      pool, [&] { nodes_promise.set_value(timed(sinfo_s, [&] { return slurm_.nodes(); })); });
  // Storage probes run beside the Slurm calls, each with its own deadline.
  std::vector<std::promise<StorageObservation>> storage_promises(config_.storage.size());
  std::vector<std::future<StorageObservation>> storage_futures;
  for (size_t i = 0; i < config_.storage.size(); ++i) {
    storage_futures.push_back(storage_promises[i].get_future());
    boost::asio::post(pool, [&, i] {
      storage_promises[i].set_value(probe_storage(
          config_.storage[i],
          std::chrono::duration_cast<std::chrono::milliseconds>(config_.probe_timeout)));
    });
  }
  SqueueParse queue = queue_future.get();
  SinfoParse nodes = nodes_future.get();
  result.probes.push_back({"squeue", queue.ok(), squeue_s});
  result.probes.push_back({"sinfo", nodes.ok(), sinfo_s});
  if (nodes.ok()) {
    // The node snapshot `llmwatch nodes` and the metrics read: only nodes needing attention.
    nlohmann::json snapshot = nlohmann::json::array();
    for (const auto& n : nodes.nodes)
      if (n.unusable())
        snapshot.push_back({{"name", n.name},
                            {"state", n.describe()},
                            {"reason", n.reason},
                            {"by", n.reason_set_by}});
    store_.put("nodes",
               nlohmann::json{{"total", nodes.nodes.size()}, {"attention", snapshot}}.dump(), now);
  }
  // Nodes a restarted run must avoid: drained or down now (by anyone).
  std::vector<std::string> unusable;
  if (nodes.ok()) {
    for (const auto& n : nodes.nodes)
      if (n.unusable()) unusable.push_back(n.name);
  } else {
    ++result.unknown_probes;
  }

  int failures = std::stoi(store_.get("slurm.failures").value_or("0"));
  if (!queue.ok()) {
    ++failures;
    ++result.unknown_probes;
    Finding f;
    f.key = "slurm/unreachable";
    f.kind = "unreachable";
    f.subject = "slurm";
    f.severity =
        failures >= config_.slurm.unreachable_alert_after ? Severity::Warning : Severity::Unknown;
    f.summary =
        "Slurm did not answer for " + std::to_string(failures) + " cycle(s); job states unknown";
    f.evidence.push_back(queue.error);
    findings.push_back(f);
  } else {
    failures = 0;
    scopes.push_back("slurm/");
    scopes.push_back("llmwatch/");
  }
  store_.put("slurm.failures", std::to_string(failures), now);

  // --- llmwatch's own chain ---
  if (queue.ok())
    if (auto f = ensure_successor(queue.jobs, config_, slurm_, store_, now, config_.dry_run))
      findings.push_back(*f);

  // --- probes: training logs, concurrently ---
  std::vector<JobWork> work;
  if (queue.ok()) {
    const QueueIndex index(queue.jobs);
    for (const auto& job : config_.jobs) {
      JobWork w{&job, job_label(job), {}, {}, {}, 0, std::nullopt};
      w.obs.entries = select_jobs(index, job, config_.self.job_name);
      for (const auto& e : w.obs.entries)
        if (e.running() && !w.obs.running) w.obs.running = e;
      w.last = slurm_job_from_json(store_.get("lastjob:" + w.label).value_or(""));
      // squeue's text form lacks the batch script and log paths: ask scontrol once per task.
      if (w.obs.running && w.obs.running->command.empty())
        fill_from_scontrol(*w.obs.running, slurm_, w.last);
      w.progress = JobProgress::from_json(store_.get("progress:" + w.label).value_or("{}"));
      work.push_back(std::move(w));
    }
    std::vector<std::future<void>> done;
    for (auto& w : work) {
      auto task =
          std::make_shared<std::packaged_task<void()>>([&w, now] { probe_job_log(w, now); });
      done.push_back(task->get_future());
      boost::asio::post(pool, [task] { (*task)(); });
    }
    for (auto& d : done) d.get();
  }
  pool.join();

  // --- storage: record the series, then judge against it ---
  for (size_t i = 0; i < config_.storage.size(); ++i) {
    const auto& settings = config_.storage[i];
    StorageObservation o = storage_futures[i].get();
    result.probes.push_back({"storage:" + settings.path, o.ok() && o.quota_error.empty(), 0});
    if (!o.ok() || !o.quota_error.empty()) ++result.unknown_probes;
    std::vector<std::pair<double, double>> series;
    StorageFigures f;
    if (o.ok()) {
      f = storage_figures(settings, o, {});
      store_.db()
          .prepare(
              "INSERT INTO storage_series(path, ts, used_bytes, usable_bytes, used_inodes, "
              "total_inodes) "
              "VALUES(?,?,?,?,?,?)")
          .bind(1, settings.path)
          .bind(2, now)
          .bind(3, f.used_bytes)
          .bind(4, f.usable_bytes)
          .bind(5, f.used_inodes)
          .bind(6, f.total_inodes)
          .run();
      auto st = store_.db().prepare(
          "SELECT ts, used_bytes FROM storage_series WHERE path=? AND ts>=? ORDER BY ts");
      st.bind(1, settings.path).bind(2, now - 86400.0);
      while (st.step()) series.emplace_back(st.real(0), st.real(1));
      f = storage_figures(settings, o, series);
      scopes.push_back("storage:" + settings.path + "/space");
      scopes.push_back("storage:" + settings.path + "/inodes");
      scopes.push_back("storage:" + settings.path + "/forecast");
      scopes.push_back("storage:" + settings.path + "/unknown");
      if (o.quota_error.empty()) scopes.push_back("storage:" + settings.path + "/quota");
      nlohmann::json snap = {{"used_bytes", f.used_bytes},
                             {"usable_bytes", f.usable_bytes},
                             {"total_bytes", o.total_bytes},
                             {"used_inodes", f.used_inodes},
                             {"total_inodes", f.total_inodes}};
      if (f.seconds_to_full) snap["seconds_to_full"] = *f.seconds_to_full;
      if (o.quota)
        snap["quota"] = {{"used_bytes", o.quota->used_bytes},
                         {"limit_bytes", o.quota->limit_bytes}};
      store_.put("storage:" + settings.path, snap.dump(), now);
    }
    auto storage_findings = evaluate_storage(settings, o, f);
    if (!settings.checkpoint_dir.empty() && o.ok()) {
      auto scan = scan_checkpoints(settings.checkpoint_dir, settings.checkpoint_glob, now);
      auto ckpt = evaluate_checkpoints(settings, o, f, scan);
      storage_findings.insert(storage_findings.end(), ckpt.begin(), ckpt.end());
      scopes.push_back("storage:" + settings.path + "/checkpoint");
      clean_checkpoints(settings, scan, store_, now, settings.cleanup_dry_run || config_.dry_run);
    }
    findings.insert(findings.end(), storage_findings.begin(), storage_findings.end());
  }

  // --- rules ---
  for (auto& w : work) {
    w.obs.progress = &w.progress;
    if (w.obs.running) result.probes.push_back({"log:" + w.label, w.obs.log_error.empty(), 0});
    if (!w.obs.log_error.empty()) ++result.unknown_probes;
    auto job_findings = evaluate_job(*w.settings, w.obs, now);
    findings.insert(findings.end(), job_findings.begin(), job_findings.end());
    scopes.push_back("job:" + w.label + "/");
    result.log_bytes += w.bytes;
  }

  // --- node health: GPU verdicts first, so a faulty node is drained before the job that ran
  // on it is restarted. Without sinfo there are no reasons or limits to go by: no node step.
  NodeStep node_step;
  if (nodes.ok() && config_.gpu.enabled) {
    std::vector<WatchedTask> running;
    for (const auto& w : work)
      if (w.obs.running) running.push_back({w.label, *w.obs.running});
    node_step = node_health_step(config_, slurm_, store_, nodes, running, now);
    findings.insert(findings.begin(), node_step.findings.begin(), node_step.findings.end());
    scopes.insert(scopes.end(), node_step.scopes.begin(), node_step.scopes.end());
    unusable.insert(unusable.end(), node_step.bad_nodes.begin(), node_step.bad_nodes.end());
    result.unknown_probes += node_step.unknown;
    result.probes.push_back({"node-health", node_step.unknown == 0, 0});
  }

  // --- record findings, then decide and act ---
  std::set<std::string> seen;
  std::map<std::string, double> first_seen;
  store_.db().transaction([&] {
    for (const auto& f : findings) {
      seen.insert(f.key);
      if (store_.observe(f, now) == FindingChange::New) {
        ++result.new_findings;
        store_.add_event(now, "finding", f.subject, severity_name(f.severity),
                         f.key + ": " + f.summary);
        // Lemon-node bookkeeping: each node a crashed task ran on gets an incident.
        if (f.kind == "crashed")
          for (const auto& w : work)
            if (w.label == f.subject)
              if (const auto& t = w.obs.running ? w.obs.running : w.last; t)
                for (const auto& node :
                     expand_hostlist(t->nodes).value_or(std::vector<std::string>{}))
                  store_.add_event(now, "incident", node, "warning",
                                   "task " + t->display_id() + " of " + w.label + " crashed");
      }
    }
    for (const auto& row : store_.firing()) first_seen[row.key] = row.first_seen;
  });

  Executor executor(config_, store_, slurm_, now);
  for (const auto& f : findings) {
    const JobWork* w = nullptr;
    for (const auto& candidate : work)
      if (f.subject == candidate.label) w = &candidate;
    ActionRequest base;
    base.finding = f;
    base.episode = first_seen[f.key];
    base.exclude = unusable;
    std::vector<std::string> plan;
    if (auto explicit_plan = node_step.plans.find(f.key); explicit_plan != node_step.plans.end()) {
      base.job = f.subject;  // the node
      plan = explicit_plan->second;
    } else if (w) {
      base.job = w->label;
      base.settings = w->settings;
      base.task = w->obs.running ? w->obs.running : w->last;  // a gone job: its last run
      base.queue = w->obs.entries;
      // A crash may be the node's fault: keep the restarted run off the nodes it ran on.
      if (f.kind == "crashed" && base.task)
        if (auto implicated = expand_hostlist(base.task->nodes))
          base.exclude.insert(base.exclude.end(), implicated->begin(), implicated->end());
      plan = actions_for(f, *w->settings);
      std::vector<Finding> same_job;
      for (const auto& g : findings)
        if (g.subject == w->label) same_job.push_back(g);
      suppress_restarts_in_crash_loop(same_job, plan);
    } else {
      base.job = f.subject;
      plan = actions_for(f, JobSettings{});
    }
    // Unknown findings alert only after they persisted (the slurm probe raises them to Warning).
    if (f.severity == Severity::Unknown) plan.clear();
    result.actions += executor.run_plan(base, plan);
  }

  // --- resolve what cleared; store progress ---
  store_.db().transaction([&] {
    for (const auto& row : store_.resolve_absent(scopes, seen, now, config_.resolve_after_cycles)) {
      ++result.resolved;
      store_.add_event(now, "resolved", row.key.substr(0, row.key.find('/')), "info",
                       row.key + " resolved after " +
                           format_duration(Seconds(static_cast<long long>(now - row.first_seen))));
      executor.notify_resolved(row);
    }
    for (auto& w : work) {
      for (const auto& [step, ts] : w.advances)
        store_.add_progress(w.label, ts, step, w.progress.step_time, w.progress.loss);
      store_.put("progress:" + w.label, w.progress.to_json(), now);
      // The last run is rewritten only when it changed (a new task, state or nodes).
      if (w.obs.running &&
          !(w.last && w.last->display_id() == w.obs.running->display_id() &&
            w.last->state == w.obs.running->state && w.last->nodes == w.obs.running->nodes))
        store_.put("lastjob:" + w.label, slurm_job_to_json(*w.obs.running), now);
      // The training loop removes the save switch once it saved: say so, once.
      if (!w.obs.save_switch_age && store_.get("save.requested:" + w.label).value_or("") == "1") {
        store_.put("save.requested:" + w.label, "0", now);
        store_.add_event(
            now, "save", w.label, "info",
            "save switch removed by the training loop: checkpoint taken (step " +
                (w.progress.step ? std::to_string(*w.progress.step) : std::string("?")) + ")");
      }
      nlohmann::json view = {{"entries", nlohmann::json::array()}};
      for (const auto& e : w.obs.entries)
        view["entries"].push_back(
            {{"id", e.display_id()}, {"state", e.state}, {"reason", e.reason}, {"nodes", e.nodes}});
      store_.put("jobview:" + w.label, view.dump(), now);
    }
  });

  // --- repeat what keeps firing, then send everything due (this cycle's and retries) ---
  double repeat = static_cast<double>(config_.alert_repeat_every.count());
  for (const auto& row : store_.firing()) {
    if (row.notified_at <= 0 || now - row.notified_at < repeat) continue;
    std::string summary = "still firing after " +
                          format_duration(Seconds(static_cast<long long>(now - row.first_seen))) +
                          ": " + row.summary;
    AlertMessage m = message_for(row, "firing", summary, now);
    queue_alert(config_, store_, m, now);
    store_.set_notified(row.key, now);
  }
  flush_deliveries(config_, store_, now);

  result.findings = findings;
  result.finished = unix_now();
  if (result.finished < now) result.finished = now;
  store_.record_cycle(now, result.finished, hostname(), static_cast<int>(getpid()),
                      static_cast<int>(findings.size()), result.actions, result.unknown_probes);
  nlohmann::json heartbeat = {{"ts", now},
                              {"duration", result.finished - now},
                              {"host", hostname()},
                              {"pid", getpid()},
                              {"findings", findings.size()},
                              {"unknown_probes", result.unknown_probes}};
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : result.probes)
    probes.push_back({{"name", p.name}, {"ok", p.ok}, {"seconds", p.seconds}});
  heartbeat["probes"] = probes;
  store_.put("heartbeat", heartbeat.dump(), now);
  remove_old_own_logs(config_.state_dir, config_.self.log_max_age, now);
  // Bounded state: once an hour, drop history older than keep_history.
  double compacted = std::stod(store_.get("compacted_at").value_or("0"));
  if (now - compacted >= 3600) {
    store_.compact(now - static_cast<double>(config_.keep_history.count()));
    store_.put("compacted_at", std::to_string(now), now);
  }
  if (!config_.metrics_file.empty())
    write_metrics_file(config_.metrics_file, config_, store_, result.finished);
  if (!config_.self.deadman_url.empty()) {
    auto r = http_request("GET", config_.self.deadman_url, "", {}, Seconds(10));
    if (!r.ok())
      store_.add_event(now, "deadman", "llmwatch", "warning", "dead-man ping failed: " + r.error);
  }
  return result;
}

}  // namespace llmwatch

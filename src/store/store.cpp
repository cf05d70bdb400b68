#include "store/store.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "probes/gpu/gpu_telemetry.h"
#include "rules/end_cause.h"
#include "store/goodput_ledger.h"
#include "store/keys.h"
#include "store/migrations.h"
#include "util/text.h"

namespace llmwatch {

std::string Store::db_path(const std::string& state_dir) {
  return state_dir + "/state.db";
}

static std::string ensure_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw DbError(dir + ": cannot create state_dir: " + ec.message());
  return dir;
}

Store::Store(const std::string& state_dir) : db_(db_path(ensure_dir(state_dir))) {
  migrate(db_);
}

void Store::add_event(double ts, const std::string& kind, const std::string& subject,
                      const std::string& severity, const std::string& message,
                      const std::string& data_json) {
  db_.prepare("INSERT INTO events(ts, kind, subject, severity, message, data) VALUES(?,?,?,?,?,?)")
      .bind(1, ts)
      .bind(2, kind)
      .bind(3, subject)
      .bind(4, severity)
      .bind(5, message)
      .bind(6, data_json)
      .run();
}

std::vector<EventRow> Store::events(double since, const std::string& subject_like, int limit) {
  auto st = db_.prepare(
      "SELECT ts, kind, subject, severity, message, data FROM events WHERE ts >= ? AND subject "
      "LIKE ? "
      "ORDER BY ts DESC, id DESC LIMIT ?");
  st.bind(1, since).bind(2, subject_like.empty() ? std::string("%") : subject_like).bind(3, limit);
  std::vector<EventRow> out;
  while (st.step())
    out.push_back({st.real(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5)});
  return {out.rbegin(), out.rend()};  // oldest first, like a log
}

void Store::put(const std::string& key, const std::string& value, double now) {
  if (kv_trusted_)
    if (const auto* known = kv_.find(key); known && *known == value) return;
  // An unchanged value is not written again (`updated` is when it last changed): a cycle
  // puts every watched job's view and state, most of them the same as the cycle before, and
  // each rewrite cost a page in the rollback journal and in the file.
  db_.prepare(
         "INSERT INTO kv(key, value, updated) VALUES(?,?,?) "
         "ON CONFLICT(key) DO UPDATE SET value=excluded.value, updated=excluded.updated "
         "WHERE kv.value IS NOT excluded.value")
      .bind(1, key)
      .bind(2, value)
      .bind(3, now)
      .run();
  kv_.remember(key, value);
}

std::optional<std::string> Store::get(const std::string& key) {
  if (kv_trusted_)
    if (const auto* known = kv_.find(key)) return *known;
  auto st = db_.prepare("SELECT value FROM kv WHERE key = ?");
  st.bind(1, key);
  std::optional<std::string> value;
  if (st.step()) value = st.text(0);
  // What was just read is true now; the next transaction's check forgets it if another
  // connection writes it.
  kv_.remember(key, value);
  return value;
}

void Store::trust_kv_memo() {
  auto st = db_.prepare("PRAGMA data_version");
  if (kv_.check(st.step() ? st.integer(0) : -1)) forget_telemetry_known();
  kv_trusted_ = true;
}

JobProgress Store::progress(const std::string& job) {
  std::string text = get(kv::progress(job)).value_or("{}");
  if (auto it = progress_.find(job); it != progress_.end() && it->second.text == text)
    return it->second.parsed;
  JobProgress parsed = JobProgress::from_json(text);
  if (auto cold = get(kv::progress_cold(job))) JobProgress::read_cold(parsed, *cold);
  auto& known = progress_[job];
  known.text = std::move(text);
  known.parsed = parsed;
  known.cold_at = 0;  // not written by this process yet: the next put writes it
  known.cold_dirty = true;
  return parsed;
}

void Store::put_progress(const std::string& job, JobProgress progress, double now) {
  std::string hot = progress.hot_json();
  auto it = progress_.find(job);
  bool known = it != progress_.end();
  const bool cold_changed =
      !known || it->second.cold_dirty || !progress.same_cold(it->second.parsed);
  // The cold part goes at most every kColdEvery, and at once for a new task or a crash (what
  // a post-mortem after a restart of llmwatch needs). A clock gone back writes it too.
  bool cold_due =
      cold_changed &&
      (!known || now - it->second.cold_at >= kColdEvery || now < it->second.cold_at ||
       it->second.parsed.task != progress.task || it->second.parsed.crash != progress.crash);
  if (cold_due) put(kv::progress_cold(job), progress.cold_json(), now);
  if (!known || it->second.text != hot) put(kv::progress(job), hot, now);
  auto& memo = known ? it->second : progress_[job];
  memo.text = std::move(hot);
  memo.parsed = std::move(progress);
  if (cold_due) memo.cold_at = now;
  memo.cold_dirty = cold_changed && !cold_due;
}

std::optional<SlurmJob> Store::last_job(const std::string& job) {
  std::string text = get(kv::last_job(job)).value_or("");
  auto& [known, parsed] = last_jobs_[job];
  if (known != text) {
    parsed = slurm_job_from_json(text);
    known = std::move(text);
  }
  return parsed;
}

void Store::put_last_job(const std::string& job, const SlurmJob& task, double now) {
  put(kv::last_job(job), slurm_job_to_json(task), now);
  last_jobs_.erase(job);  // read back as the next reader would: parsed from what was stored
}

Store::KnownGoodput& Store::known_goodput(const std::string& job) {
  std::string text = get(kv::goodput(job)).value_or("");
  auto it = goodput_states_.find(job);
  // Another writer's state (a supervisor before this one) replaces what this one kept.
  if (it == goodput_states_.end() || it->second.text != text) {
    KnownGoodput fresh;
    fresh.live = GoodputState::from_json(text);
    fresh.text = std::move(text);
    it = goodput_states_.insert_or_assign(job, std::move(fresh)).first;
  }
  return it->second;
}

GoodputState Store::goodput_state(const std::string& job) {
  return known_goodput(job).live;
}

void Store::KnownGoodput::pending_rows(const std::string& job, std::int64_t since_day,
                                       std::vector<GoodputRow>& rows) const {
  for (const auto& [key, gpu_s] : pending) {
    const auto& [day, bucket, cause, node] = key;
    if (day >= since_day && std::abs(gpu_s) >= 1e-9)
      rows.push_back({day, job, bucket, cause, node, gpu_s});
  }
}

void Store::write_goodput(const std::string& job, KnownGoodput& known, double now) {
  std::vector<GoodputRow> rows;
  known.pending_rows(job, std::numeric_limits<std::int64_t>::min(), rows);
  transaction([&] {
    GoodputLedger::add_rows(db_, rows);
    std::string text = known.live.to_json();
    put(kv::goodput(job), text, now);
    // Kept as written when reading the text back gives the same state (valid UTF-8, finite
    // numbers); otherwise read back as the next reader would.
    known.text = known.live.round_trips() ? std::move(text) : std::string("\x01");
  });
  known.pending.clear();
  known.flushed_at = now;
  known.dirty = false;
}

void Store::put_goodput_state(const std::string& job, const GoodputState& state, double now) {
  KnownGoodput& known = known_goodput(job);
  known.live = state;
  write_goodput(job, known, now);
}

void Store::record_goodput(const std::string& job, const GoodputState& state,
                           const std::vector<GoodputCharge>& charges, double now,
                           const std::vector<NodeCharge>& taken_back) {
  // The state was just read (goodput_state, in this transaction): not read again.
  auto it = goodput_states_.find(job);
  KnownGoodput& known = it != goodput_states_.end() ? it->second : known_goodput(job);
  bool due = now - known.flushed_at >= kGoodputEvery || now < known.flushed_at ||
             state.task != known.live.task || state.stepped != known.live.stepped ||
             state.hung != known.live.hung || state.between_from != known.live.between_from;
  for (const auto& c : charges) {
    known.pending[{GoodputLedger::day_of(now), c.bucket, c.cause, c.node}] += c.gpu_s;
    // Training goes on (kept, redone or slowed): it may wait. Anything else changes the
    // run's story (a save, a hang, an end, a queue): it is written at once.
    due |= c.bucket != "productive" && c.bucket != "rework" && c.bucket != "slow";
  }
  for (const auto& k : taken_back) {
    known.pending[{k.day, k.bucket, k.cause, k.node}] -= k.gpu_s;
    known.pending[{k.day, k.bucket, k.cause, ""}] += k.gpu_s;
    due = true;
  }
  known.live = state;
  known.dirty = true;
  if (due) write_goodput(job, known, now);
}

void Store::flush_goodput() {
  for (auto& [job, known] : goodput_states_)
    if (known.dirty) write_goodput(job, known, known.live.at);
}

std::vector<GoodputRow> Store::pending_goodput(std::int64_t since_day,
                                               const std::string& job) const {
  std::vector<GoodputRow> rows;
  for (const auto& [run, known] : goodput_states_)
    if (job.empty() || run == job) known.pending_rows(run, since_day, rows);
  return rows;
}

static std::string evidence_json(const std::vector<std::string>& lines) {
  std::string out = "[";
  for (const auto& line : lines) {
    out += out.size() > 1 ? ",\"" : "\"";
    for (char c : line) {
      if (c == '"' || c == '\\')
        out += '\\', out += c;
      else if (static_cast<unsigned char>(c) < 0x20)
        out += ' ';
      else
        out += c;
    }
    out += '"';
  }
  return out + "]";
}

FindingChange Store::observe(const Finding& f, double now) {
  auto st = db_.prepare("SELECT state, episode FROM findings WHERE key = ?");
  st.bind(1, f.key);
  bool firing = st.step() && st.text(0) == "firing";
  // Another episode under a firing key (a second end of the run with no cycle seeing it alive
  // in between) is new. An episode first given to a row written without one continues it.
  bool same_episode =
      firing && (f.episode.empty() || st.text(1).empty() || st.text(1) == f.episode);
  if (same_episode) {
    db_.prepare(
           "UPDATE findings SET severity=?, summary=?, evidence=?, last_seen=?, missing=0, "
           "episode=? WHERE key=?")
        .bind(1, severity_name(f.severity))
        .bind(2, f.summary)
        .bind(3, evidence_json(f.evidence))
        .bind(4, now)
        .bind(5, f.episode.empty() ? st.text(1) : f.episode)
        .bind(6, f.key)
        .run();
    return FindingChange::Ongoing;
  }
  db_.prepare(
         "INSERT INTO findings(key, severity, summary, evidence, state, first_seen, last_seen, "
         "episode) VALUES(?,?,?,?, 'firing', ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
         "severity=excluded.severity, "
         "summary=excluded.summary, evidence=excluded.evidence, state='firing', "
         "first_seen=excluded.first_seen, last_seen=excluded.last_seen, resolved_at=NULL, "
         "notified_at=NULL, notified_severity='', missing=0, episode=excluded.episode")
      .bind(1, f.key)
      .bind(2, severity_name(f.severity))
      .bind(3, f.summary)
      .bind(4, evidence_json(f.evidence))
      .bind(5, now)
      .bind(6, now)
      .bind(7, f.episode)
      .run();
  return FindingChange::New;
}

static FindingRow finding_row(Statement& st) {
  return {st.text(0), st.text(1), st.text(2), st.text(3), st.text(4),
          st.real(5), st.real(6), st.real(7), st.real(8), st.text(9)};
}

std::vector<FindingRow> Store::resolve_absent(const std::vector<std::string>& scopes,
                                              const std::set<std::string>& seen, double now,
                                              int after_cycles) {
  std::vector<FindingRow> resolved;
  for (const auto& row : firing()) {
    if (seen.count(row.key)) continue;
    bool in_scope = false;
    for (const auto& scope : scopes) in_scope |= row.key.rfind(scope, 0) == 0;
    if (!in_scope) continue;
    db_.prepare("UPDATE findings SET missing=missing+1 WHERE key=?").bind(1, row.key).run();
    auto st = db_.prepare("SELECT missing FROM findings WHERE key=?");
    st.bind(1, row.key);
    if (st.step() && st.integer(0) < after_cycles)
      continue;  // hysteresis: gone, but not long enough
    resolved.push_back(mark_resolved(row, now));
  }
  return resolved;
}

std::vector<FindingRow> Store::resolve_keys(const std::vector<std::string>& keys, double now) {
  std::vector<FindingRow> resolved;
  if (keys.empty()) return resolved;
  for (const auto& row : firing())
    if (std::find(keys.begin(), keys.end(), row.key) != keys.end())
      resolved.push_back(mark_resolved(row, now));
  return resolved;
}

FindingRow Store::mark_resolved(const FindingRow& row, double now) {
  db_.prepare("UPDATE findings SET state='resolved', resolved_at=? WHERE key=?")
      .bind(1, now)
      .bind(2, row.key)
      .run();
  FindingRow r = row;
  r.state = "resolved";
  r.resolved_at = now;
  return r;
}

void Store::set_notified(const std::string& key, double now, const std::string& severity) {
  db_.prepare("UPDATE findings SET notified_at=?, notified_severity=? WHERE key=?")
      .bind(1, now)
      .bind(2, severity)
      .bind(3, key)
      .run();
}

std::vector<FindingRow> Store::firing() {
  auto st = db_.prepare(
      "SELECT key, severity, summary, evidence, state, first_seen, last_seen, "
      "COALESCE(resolved_at, 0), "
      "COALESCE(notified_at, 0), notified_severity FROM findings WHERE state='firing' "
      "ORDER BY first_seen");
  std::vector<FindingRow> out;
  while (st.step()) out.push_back(finding_row(st));
  return out;
}

std::optional<std::int64_t> Store::begin_action(const std::string& idem_key,
                                                const std::string& kind, const std::string& subject,
                                                const std::string& reason, double now) {
  auto started = start_action(idem_key, kind, subject, reason, now);
  return started ? std::optional<std::int64_t>(started->id) : std::nullopt;
}

std::optional<Store::ActionStart> Store::start_action(const std::string& idem_key,
                                                      const std::string& kind,
                                                      const std::string& subject,
                                                      const std::string& reason, double now) {
  ActionStart out;
  auto before = db_.prepare("SELECT state FROM actions WHERE idem_key=?");
  before.bind(1, idem_key);
  if (before.step()) out.retaken_from = before.text(0);
  auto st = db_.prepare(
      "INSERT INTO actions(idem_key, kind, subject, reason, state, started) "
      "VALUES(?,?,?,?, 'intent', ?) ON CONFLICT(idem_key) DO UPDATE SET state='intent', "
      "reason=excluded.reason, started=excluded.started, finished=NULL, detail='', "
      "attempts=actions.attempts + (actions.state='failed') "
      "WHERE actions.state IN ('dry-run','waiting','withdrawn') OR (actions.state='failed' AND "
      "actions.attempts < ? AND excluded.started >= COALESCE(actions.finished, actions.started) "
      "+ ? * (1 << (actions.attempts - 1))) RETURNING id, attempts");
  st.bind(1, idem_key)
      .bind(2, kind)
      .bind(3, subject)
      .bind(4, reason)
      .bind(5, now)
      .bind(6, kMaxAttempts)
      .bind(7, kRetryAfter);
  if (!st.step()) return std::nullopt;
  out.id = st.integer(0);
  out.attempts = static_cast<int>(st.integer(1));
  return out;
}

void Store::finish_action(std::int64_t id, const std::string& state, const std::string& detail,
                          double now) {
  db_.prepare("UPDATE actions SET state=?, detail=?, finished=? WHERE id=?")
      .bind(1, state)
      .bind(2, detail)
      .bind(3, now)
      .bind(4, id)
      .run();
}

bool Store::withdraw_action(const std::string& idem_key, const std::string& why, double now) {
  auto st = db_.prepare(
      "UPDATE actions SET state='withdrawn', detail=detail || '; withdrawn: ' || ?, finished=? "
      "WHERE idem_key=? AND state='done' RETURNING id");
  st.bind(1, why).bind(2, now).bind(3, idem_key);
  return st.step();
}

// Journal entries that did something: dry-run, skipped, waiting and withdrawn ones did nothing
// (they use up no budget, and cancelled no task).
static const std::string kDidSomething = "state NOT IN ('dry-run','skipped','waiting','withdrawn')";

int Store::count_actions(const std::string& kind, const std::string& subject, double since,
                         double until) {
  auto st = db_.prepare(
      "SELECT COUNT(*) FROM actions WHERE kind=? AND (?='' OR subject=?) AND started>=? "
      "AND started<? AND " +
      kDidSomething);
  st.bind(1, kind).bind(2, subject).bind(3, subject).bind(4, since).bind(5, until);
  st.step();
  return static_cast<int>(st.integer(0));
}

bool Store::cancelled_task(const std::string& run_key, double since) {
  auto st = db_.prepare("SELECT idem_key FROM actions WHERE kind='cancel' AND started>=? AND " +
                        kDidSomething);
  st.bind(1, since);
  while (st.step())
    if (cancelled_run_key(st.text(0)) == run_key) return true;
  return false;
}

CancelsByTask Store::cancels_done(double since) {
  CancelsByTask out;
  auto st = db_.prepare(
      "SELECT idem_key, COALESCE(finished, started) FROM actions WHERE kind='cancel' AND "
      "state='done' AND started>=?");
  st.bind(1, since);
  while (st.step()) {
    std::string task = cancelled_run_key(st.text(0));
    if (task.empty()) continue;
    CancelsDone& c = out[task];
    ++c.count;
    c.last_at = std::max(c.last_at, st.real(1));
  }
  return out;
}

bool Store::add_incident(double ts, const std::string& node, const std::string& task,
                         const std::string& message) {
  if (!task.empty()) {
    // A withdrawn one too: the end it was for is not charged again (a step loop's).
    auto st = db_.prepare(
        "SELECT 1 FROM events WHERE kind IN ('incident','incident-withdrawn') AND subject=? AND "
        "json_valid(data) AND json_extract(data, '$.task')=? LIMIT 1");
    st.bind(1, node).bind(2, task);
    if (st.step()) return false;
  }
  add_event(ts, "incident", node, "warning", message, json_dump(nlohmann::json{{"task", task}}));
  return true;
}

std::vector<std::string> Store::withdraw_incidents(double ts, const std::vector<std::string>& tasks,
                                                   const std::string& why) {
  std::vector<std::string> nodes;
  for (const auto& task : tasks) {
    auto st = db_.prepare(
        "SELECT id, subject FROM events WHERE kind='incident' AND json_valid(data) AND "
        "json_extract(data, '$.task')=?");
    st.bind(1, task);
    std::vector<std::pair<std::int64_t, std::string>> rows;
    while (st.step()) rows.emplace_back(st.integer(0), st.text(1));
    for (const auto& [id, node] : rows) {
      db_.prepare("UPDATE events SET kind='incident-withdrawn' WHERE id=?").bind(1, id).run();
      add_event(ts, "withdrawn", node, "info",
                "incident of task " + task.substr(0, task.find('@')) + " withdrawn: " + why,
                json_dump(nlohmann::json{{"task", task}}));
      nodes.push_back(node);
    }
  }
  return nodes;
}

std::map<std::string, int> Store::incident_counts(double since) {
  // One query for all nodes, not one per node (thousands of them) every cycle.
  std::map<std::string, int> out;
  auto st = db_.prepare(
      "SELECT subject, COUNT(*) FROM events WHERE kind='incident' AND ts>=? GROUP BY subject");
  st.bind(1, since);
  while (st.step()) out[st.text(0)] = static_cast<int>(st.integer(1));
  return out;
}

std::map<std::pair<std::string, std::string>, int> Store::end_counts() {
  std::map<std::pair<std::string, std::string>, int> out;
  auto st = db_.prepare(
      "SELECT subject, json_extract(data, '$.class'), COUNT(*) FROM events WHERE kind='ended' "
      "AND json_valid(data) GROUP BY 1, 2");
  while (st.step()) out[{st.text(0), st.text(1)}] = static_cast<int>(st.integer(2));
  return out;
}

namespace {

constexpr const char* kActionColumns =
    "SELECT id, idem_key, kind, subject, reason, state, detail, started, COALESCE(finished,0) "
    "FROM actions ";

std::vector<ActionRow> action_rows(Statement& st) {
  std::vector<ActionRow> out;
  while (st.step())
    out.push_back({st.integer(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5),
                   st.text(6), st.real(7), st.real(8)});
  return out;
}

}  // namespace

std::vector<ActionRow> Store::recent_actions(int limit) {
  auto st = db_.prepare(std::string(kActionColumns) + "ORDER BY started DESC, id DESC LIMIT ?");
  st.bind(1, limit);
  return action_rows(st);
}

std::vector<ActionRow> Store::unfinished_actions(double before) {
  auto st =
      db_.prepare(std::string(kActionColumns) + "WHERE state='intent' AND started < ? ORDER BY id");
  st.bind(1, before);
  return action_rows(st);
}

void Store::add_progress(const std::string& job, double ts, std::int64_t step,
                         std::optional<double> step_time, std::optional<double> loss) {
  auto st = db_.prepare("INSERT INTO progress(job, ts, step, step_time, loss) VALUES(?,?,?,?,?)");
  st.bind(1, job).bind(2, ts).bind(3, step);
  step_time ? st.bind(4, *step_time) : st.bind_null(4);
  loss ? st.bind(5, *loss) : st.bind_null(5);
  st.run();
}

void Store::add_storage_sample(const std::string& path, double ts, const StorageSample& sample) {
  db_.prepare(
         "INSERT INTO storage_series(path, ts, used_bytes, usable_bytes, used_inodes, "
         "total_inodes) VALUES(?,?,?,?,?,?)")
      .bind(1, path)
      .bind(2, ts)
      .bind(3, sample.used_bytes)
      .bind(4, sample.usable_bytes)
      .bind(5, sample.used_inodes)
      .bind(6, sample.total_inodes)
      .run();
}

std::vector<std::pair<double, double>> Store::storage_used_series(const std::string& path,
                                                                  double since) {
  std::vector<std::pair<double, double>> out;
  auto st =
      db_.prepare("SELECT ts, used_bytes FROM storage_series WHERE path=? AND ts>=? ORDER BY ts");
  st.bind(1, path).bind(2, since);
  while (st.step()) out.emplace_back(st.real(0), st.real(1));
  return out;
}

void Store::record_cycle(double started, double finished, const std::string& host, int pid,
                         int findings, int actions, int unknown_probes) {
  db_.prepare(
         "INSERT INTO cycles(started, finished, host, pid, findings, actions, unknown_probes) "
         "VALUES(?,?,?,?,?,?,?)")
      .bind(1, started)
      .bind(2, finished)
      .bind(3, host)
      .bind(4, pid)
      .bind(5, findings)
      .bind(6, actions)
      .bind(7, unknown_probes)
      .run();
}

void Store::compact(double before, double thin_before) {
  transaction([&] {
    // Only what aged since the last compaction is thinned (the rest was, or is dropped now),
    // and at most a day of it at a time: the first compaction of a month of history thins it
    // in a day of hourly steps, never in one transaction a whole cycle long.
    double from = before;
    if (auto thinned = get(kv::kSeriesThinnedTo))
      from = std::max(from, std::strtod(thinned->c_str(), nullptr));
    else if (auto st = db_.prepare("SELECT MIN(ts) FROM progress"); st.step() && !st.is_null(0))
      from = std::max(from, st.real(0));
    thin_before = std::min(thin_before, from + kSeriesThinStep);
    if (thin_before > from) {
      db_.prepare(
             "DELETE FROM progress WHERE ts >= ?1 AND ts < ?2 AND rowid NOT IN (SELECT "
             "MIN(rowid) FROM progress WHERE ts >= ?1 AND ts < ?2 GROUP BY job, CAST(ts / ?3 AS "
             "INTEGER))")
          .bind(1, from)
          .bind(2, thin_before)
          .bind(3, kSeriesThinEvery)
          .run();
      put(kv::kSeriesThinnedTo, std::to_string(thin_before), thin_before);
    }
    db_.prepare("DELETE FROM events WHERE ts < ?").bind(1, before).run();
    db_.prepare("DELETE FROM progress WHERE ts < ?").bind(1, before).run();
    db_.prepare("DELETE FROM cycles WHERE started < ?").bind(1, before).run();
    db_.prepare("DELETE FROM storage_series WHERE ts < ?").bind(1, before).run();
    db_.prepare("DELETE FROM findings WHERE state='resolved' AND resolved_at < ?")
        .bind(1, before)
        .run();
  });
}

std::vector<std::pair<double, std::int64_t>> Store::progress_steps(const std::string& job) {
  std::vector<std::pair<double, std::int64_t>> out;
  auto st = db_.prepare("SELECT ts, step FROM progress WHERE job = ? ORDER BY ts");
  st.bind(1, job);
  while (st.step()) out.emplace_back(st.real(0), st.integer(1));
  return out;
}

std::optional<double> Store::progress_first(const std::string& job) {
  auto st = db_.prepare("SELECT ts FROM progress WHERE job = ? ORDER BY ts LIMIT 1");
  st.bind(1, job);
  if (!st.step()) return std::nullopt;
  return st.real(0);
}

std::optional<std::pair<double, std::int64_t>> Store::progress_at(const std::string& job,
                                                                  double ts) {
  auto st = db_.prepare(
      "SELECT ts, step FROM progress WHERE job = ? AND ts <= ? ORDER BY ts DESC LIMIT 1");
  st.bind(1, job).bind(2, ts);
  if (!st.step()) return std::nullopt;
  return std::make_pair(st.real(0), st.integer(1));
}

std::optional<double> Store::progress_reached(const std::string& job, double after,
                                              std::int64_t step) {
  auto st = db_.prepare(
      "SELECT ts FROM progress WHERE job = ? AND ts > ? AND step >= ? ORDER BY ts LIMIT 1");
  st.bind(1, job).bind(2, after).bind(3, step);
  if (!st.step()) return std::nullopt;
  return st.real(0);
}

std::vector<Store::ActionCount> Store::action_counts() {
  std::vector<ActionCount> out;
  auto st = db_.prepare(
      "SELECT kind, state, COUNT(*) FROM actions GROUP BY kind, state ORDER BY kind, state");
  while (st.step()) out.push_back({st.text(0), st.text(1), st.integer(2)});
  return out;
}

namespace {

// Binds ?1 and ?2 to the range of keys that start with `prefix` (an index range, not a LIKE,
// so '_' and '%' in node names mean themselves).
void bind_prefix(Statement& st, const std::string& prefix) {
  st.bind(1, prefix);
  st.bind(2, prefix.substr(0, prefix.size() - 1) + static_cast<char>(prefix.back() + 1));
}

}  // namespace

void Store::forget_telemetry_known() {
  telemetry_.clear();
  series_parsed_ = 0;
}

void Store::add_telemetry_sample(const std::string& node, const TelemetrySample& sample) {
  if (!std::isfinite(sample.ts)) return;
  if (kv_trusted_)
    if (auto it = telemetry_.find(node); it != telemetry_.end() && sample.ts <= it->second.newest)
      return;
  auto newest = db_.prepare("SELECT MAX(ts) FROM gpu_telemetry WHERE node = ?");
  newest.bind(1, node);
  const double stored = newest.step() && !newest.is_null(0)
                            ? newest.real(0)
                            : -std::numeric_limits<double>::infinity();
  KnownSeries& known = telemetry_[node];
  if (known.newest != stored && known.series) {  // what was kept parsed is not what is stored
    known.series.reset();
    --series_parsed_;
  }
  known.newest = stored;
  if (sample.ts <= stored) return;
  db_.prepare("INSERT INTO gpu_telemetry(node, ts, gpus) VALUES(?, ?, ?)")
      .bind(1, node)
      .bind(2, sample.ts)
      .bind(3, telemetry_json_text(sample.gpus))
      .run();
  db_.prepare(
         "DELETE FROM gpu_telemetry WHERE node = ?1 AND ts <= (SELECT ts FROM gpu_telemetry "
         "WHERE node = ?1 ORDER BY ts DESC LIMIT 1 OFFSET ?2)")
      .bind(1, node)
      .bind(2, kTelemetryKept)
      .run();
  known.newest = sample.ts;
  // A series kept parsed takes the sample as the table did: the newest kTelemetryKept.
  if (known.series) {
    auto series = std::make_shared<TelemetrySeries>();
    const std::size_t keep = std::min<std::size_t>(known.series->size(), kTelemetryKept - 1);
    series->reserve(keep + 1);
    series->insert(series->end(), known.series->end() - static_cast<std::ptrdiff_t>(keep),
                   known.series->end());
    series->push_back(sample);
    known.series = std::move(series);
  }
}

std::shared_ptr<const TelemetrySeries> Store::telemetry_series(const std::string& node) {
  if (kv_trusted_)
    if (auto it = telemetry_.find(node); it != telemetry_.end() && it->second.series)
      return it->second.series;
  auto series = std::make_shared<TelemetrySeries>();
  auto st = db_.prepare("SELECT ts, gpus FROM gpu_telemetry WHERE node = ? ORDER BY ts");
  st.bind(1, node);
  while (st.step())
    series->push_back(
        {st.real(0), telemetry_from_json(nlohmann::json::parse(st.text(1), nullptr, false))});
  // What was just read is true now; the next transaction's check forgets it if another
  // connection writes.
  if (auto it = telemetry_.find(node);
      series_parsed_ >= kSeriesKeptParsed && (it == telemetry_.end() || !it->second.series))
    forget_telemetry_known();
  KnownSeries& known = telemetry_[node];
  if (!known.series) ++series_parsed_;
  known.newest = series->empty() ? -std::numeric_limits<double>::infinity() : series->back().ts;
  known.series = series;
  return series;
}

int Store::forget_telemetry(const std::set<std::string>& kept) {
  std::vector<std::string> gone;
  transaction([&] {
    auto st = db_.prepare("SELECT DISTINCT node FROM gpu_telemetry");
    while (st.step())
      if (std::string node = st.text(0); !kept.count(node)) gone.push_back(std::move(node));
    for (const auto& node : gone) {
      db_.prepare("DELETE FROM gpu_telemetry WHERE node = ?").bind(1, node).run();
      if (auto it = telemetry_.find(node); it != telemetry_.end()) {
        if (it->second.series) --series_parsed_;
        telemetry_.erase(it);
      }
    }
  });
  return static_cast<int>(gone.size());
}

int Store::forget_jobs(const std::set<std::string>& kept, double before) {
  int removed = 0;
  transaction([&] {
    for (const std::string prefix : kv::kJobKeyPrefixes) {
      std::vector<std::string> gone;
      auto st = db_.prepare("SELECT key FROM kv WHERE key >= ? AND key < ? AND updated < ?");
      bind_prefix(st, prefix);
      st.bind(3, before);
      while (st.step())
        if (std::string key = st.text(0); !kept.count(key.substr(prefix.size())))
          gone.push_back(std::move(key));
      for (const auto& key : gone) {
        db_.prepare("DELETE FROM kv WHERE key = ?").bind(1, key).run();
        kv_.remember(key, std::nullopt);
        ++removed;
      }
    }
  });
  return removed;
}

std::string NodeHealth::summary() const {
  return std::string(verdict_name(verdict)) + " " + headline;
}

static NodeHealth node_health_of(const std::string& summary) {
  auto space = summary.find(' ');
  NodeHealth h;
  h.verdict = verdict_from_name(summary.substr(0, space)).value_or(Verdict::Unknown);
  h.headline = space == std::string::npos ? "" : summary.substr(space + 1);
  return h;
}

std::map<std::string, NodeHealth> Store::node_health() {
  std::map<std::string, NodeHealth> out;
  const std::string prefix = kv::kNodeHealthPrefix;
  auto st = db_.prepare("SELECT key, value FROM kv WHERE key >= ? AND key < ?");
  bind_prefix(st, prefix);
  while (st.step()) out[st.text(0).substr(prefix.size())] = node_health_of(st.text(1));
  return out;
}

std::optional<NodeHealth> Store::node_health(const std::string& node) {
  auto text = get(kv::node_health(node));
  if (!text || text->empty()) return std::nullopt;
  return node_health_of(*text);
}

bool Store::put_node_health(const std::string& node, const NodeHealth& health, double now) {
  std::string summary = health.summary();
  if (get(kv::node_health(node)).value_or("") == summary) return false;
  put(kv::node_health(node), summary, now);
  return true;
}

std::map<std::string, double> Store::drained_nodes() {
  return node_times(kv::kDrainedPrefix);
}

std::map<std::string, double> Store::rebooting_nodes() {
  return node_times(kv::kRebootingPrefix);
}

std::map<std::string, double> Store::idle_checked_nodes() {
  return node_times(kv::kIdleCheckedPrefix);
}

std::map<std::string, std::string> Store::kv_under(const std::string& prefix) {
  std::map<std::string, std::string> out;
  auto st = db_.prepare("SELECT key, value FROM kv WHERE key >= ? AND key < ? AND value != ''");
  bind_prefix(st, prefix);
  while (st.step()) out[st.text(0).substr(prefix.size())] = st.text(1);
  return out;
}

std::map<std::string, double> Store::node_times(const std::string& prefix) {
  std::map<std::string, double> out;
  for (const auto& [node, at] : kv_under(prefix)) {
    char* end = nullptr;
    double t = std::strtod(at.c_str(), &end);
    out[node] = end == at.c_str() ? 0 : t;
  }
  return out;
}

void Store::add_finding_event(double ts, const Finding& f,
                              std::optional<std::pair<double, std::int64_t>> last_step) {
  nlohmann::json data = {{"key", f.key}, {"kind", f.kind}, {"cause", f.cause}};
  if (last_step) data["step_ts"] = last_step->first, data["step"] = last_step->second;
  add_event(ts, "finding", f.subject, severity_name(f.severity), f.key + ": " + f.summary,
            json_dump(data));
}

std::vector<FindingEvent> Store::finding_events(const std::string& subject) {
  std::vector<FindingEvent> out;
  auto st = db_.prepare(
      "SELECT ts, message, data FROM events WHERE kind = 'finding' AND subject = ? ORDER BY ts");
  st.bind(1, subject);
  while (st.step()) {
    FindingEvent e{st.real(0), "", "", "", st.text(1)};
    auto data = nlohmann::json::parse(st.text(2), nullptr, false);
    if (data.is_object() && data.contains("key")) {
      e.key = data.value("key", "");
      e.kind = data.value("kind", "");
      e.cause = data.value("cause", "");
      e.step_ts = data.value("step_ts", 0.0);
      e.step = data.value("step", std::int64_t{-1});
    } else {
      // Written before findings carried their fields: "job:tr/ended: task 7 ended: completed on
      // n1": the key, and for an end the class its summary names.
      e.key = e.message.substr(0, e.message.find(": "));
      e.kind = e.key.substr(e.key.rfind('/') + 1);
      auto said = e.message.rfind("ended: ");
      for (int c = 0; said != std::string::npos && c <= static_cast<int>(EndClass::Unknown); ++c) {
        const char* name = end_class_name(EndClass(c));
        if (e.message.compare(said + 7, std::strlen(name), name) == 0) e.cause = name;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace llmwatch

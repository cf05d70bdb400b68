#pragma once
// llmwatch's memory: findings and their lifecycle, the action journal, events, progress
// series and small key/value state, in one SQLite file under state_dir. Survives restarts.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rules/cancel_held.h"
#include "rules/finding.h"
#include "rules/goodput.h"
#include "rules/gpu_telemetry_series.h"
#include "rules/job_progress.h"
#include "rules/node_report.h"
#include "slurm/slurm_job.h"
#include "store/goodput_row.h"
#include "store/kv_memo.h"
#include "store/sqlite_db.h"

namespace llmwatch {

struct EventRow {
  double ts = 0;
  std::string kind, subject, severity, message, data;
};

// A "finding" event: a finding as it was raised, typed.
struct FindingEvent {
  double ts = 0;
  std::string key, kind, cause, message;
  // The run's last step before it, when the finding is about a run that had stepped: where
  // the time it lost starts (the progress series keeps a row a minute only).
  double step_ts = 0;
  std::int64_t step = -1;
};

struct FindingRow {
  std::string key, severity, summary, evidence_json, state;
  double first_seen = 0, last_seen = 0, resolved_at = 0, notified_at = 0;
  // The severity it was last told at ("" when never told, or told before this was kept).
  std::string notified_severity;
};

struct ActionRow {
  std::int64_t id = 0;
  std::string idem_key, kind, subject, reason, state, detail;
  double started = 0, finished = 0;
};

// A node's last node-check verdict and headline, as llmwatch recorded it (typed here; the row
// is the summary text, as the history shows it).
struct NodeHealth {
  Verdict verdict = Verdict::Unknown;
  std::string headline;
  std::string summary() const;  // "CRITICAL Xid 79 on GPU 3"
  bool operator==(const NodeHealth&) const = default;
};

// What happened to a finding this cycle.
enum class FindingChange { New, Ongoing, Resolved };

class Store {
 public:
  // Opens (creating) state_dir/state.db and migrates it. Throws DbError naming the file.
  explicit Store(const std::string& state_dir);
  static std::string db_path(const std::string& state_dir);

  // Runs fn in one transaction (nested calls join the outer one). Inside it, kv reads and
  // unchanged writes are answered from memory when no other connection wrote since (KvMemo).
  // A failure forgets what is kept in memory: it may be what just rolled back.
  template <class F>
  void transaction(F&& fn) {
    bool outer = !db_.in_transaction();
    try {
      db_.transaction([&] {
        if (outer) trust_kv_memo();
        fn();
      });
    } catch (...) {
      progress_.clear();
      last_jobs_.clear();
      goodput_states_.clear();
      forget_telemetry_known();
      kv_.forget_all();
      kv_trusted_ = false;
      throw;
    }
    if (outer) kv_trusted_ = false;
  }

  // A job's progress (empty when none is stored). The daemon reads and rewrites every
  // watched job's progress each cycle: the last text read or written is kept parsed, so an
  // unchanged row is neither parsed again nor rewritten. The row is still read each time
  // (from the kv memory when no other connection wrote since), so another process's write is
  // seen (new log lines always move its cursors). Its cold part
  // (step-time and loss baselines, evidence lines: most of the bytes) is written at most every
  // kColdEvery, and at once for a new task or a crash; a restart of llmwatch, or another process,
  // sees it that old. An unchanged cold part is not even serialised: comparing the fields is
  // cheaper than writing them out to find that the text is the same.
  JobProgress progress(const std::string& job);
  // By value: a caller done with its progress moves it in (the daemon, once a cycle).
  void put_progress(const std::string& job, JobProgress progress, double now);
  static constexpr double kColdEvery = 300;

  // A job's last task as llmwatch saw it (what ended, when it ends between two looks). Kept
  // parsed, like the progress: 1,000 watched jobs' tasks were parsed again every cycle.
  std::optional<SlurmJob> last_job(const std::string& job);
  void put_last_job(const std::string& job, const SlurmJob& task, double now);
  // The goodput accountant's state of a run (#29), kept parsed too: read and written for every
  // watched run every cycle, its JSON round trip was a third of a steady cycle's CPU. The
  // state as this process last left it, which may be ahead of what is stored (below).
  GoodputState goodput_state(const std::string& job);
  // Writes a state now (and what is pending for the run with it).
  void put_goodput_state(const std::string& job, const GoodputState& state, double now);
  // One look's charges and the state after them. A steady run's looks (training only:
  // productive, rework, slow) are
  // kept in memory and written with the state at most every kGoodputEvery: the two writes per
  // run per cycle were most of the ledger's cost in a cycle. Anything else (a save, a hang,
  // an end, a new task) is written at once. The ledger and the state are always written
  // together, so a process that dies before it writes loses both alike, and its successor
  // charges that time again from the stored state: nothing is counted twice or lost.
  // `taken_back`: charges of earlier looks that are no node's after all (unblame_loop),
  // moved on their own day to no node; written at once.
  void record_goodput(const std::string& job, const GoodputState& state,
                      const std::vector<GoodputCharge>& charges, double now,
                      const std::vector<NodeCharge>& taken_back = {});
  static constexpr double kGoodputEvery = 300;
  // Writes every run's pending looks: before the lease is released (app/cmd_run). Nothing
  // writes them at the store's end: a process that lost its lease must not.
  void flush_goodput();
  // The pending looks' rows from day `since_day` (of one run when `job` is set): the views
  // of this process add them to the ledger's, so they read no staler than a write would
  // make them, and reading writes nothing (a scrape every 15 s would undo the batching).
  std::vector<GoodputRow> pending_goodput(std::int64_t since_day, const std::string& job) const;

  void add_event(double ts, const std::string& kind, const std::string& subject,
                 const std::string& severity, const std::string& message,
                 const std::string& data_json = "{}");
  std::vector<EventRow> events(double since, const std::string& subject_like, int limit);
  // The findings raised about `subject`, oldest first (add_finding_event).
  void add_finding_event(double ts, const Finding& f,
                         std::optional<std::pair<double, std::int64_t>> last_step = std::nullopt);
  std::vector<FindingEvent> finding_events(const std::string& subject);

  void put(const std::string& key, const std::string& value, double now);
  std::optional<std::string> get(const std::string& key);
  // suffix -> value, for every non-empty kv row under `prefix` (one query, not one per node).
  std::map<std::string, std::string> kv_under(const std::string& prefix);

  // A node's GPU telemetry series (rules/gpu_telemetry_series.h), a row a sample, the newest
  // kTelemetryKept kept. A sample is added unless the node has one as new already (the same
  // node-check read again); inside a transaction, the newest this process stored or saw is
  // known without a query.
  static constexpr int kTelemetryKept = 16;
  void add_telemetry_sample(const std::string& node, const TelemetrySample& sample);
  // Oldest first; never null. A series read is kept parsed and, inside a transaction, handed
  // out again (with the samples this process added since) without SQL: a standing slow-node
  // finding reads its job's every node's series each cycle, and parsing them again was ~0.5 ms
  // a node (bench/node_history_bench.cpp).
  std::shared_ptr<const TelemetrySeries> telemetry_series(const std::string& node);
  // At most this many nodes' series are kept parsed (~40 KB each under 8 GPUs: 40 MiB at most).
  static constexpr std::size_t kSeriesKeptParsed = 1024;
  // Drops the telemetry series of every node not in `kept`; returns how many were dropped.
  int forget_telemetry(const std::set<std::string>& kept);

  // Records a finding seen this cycle and says whether it is new.
  FindingChange observe(const Finding& f, double now);
  // Resolves firing findings whose key starts with one of `scopes` and that were not
  // observed this cycle; returns them. Scopes whose probe was unknown are left alone.
  // after_cycles: hysteresis, how many evaluated cycles in a row it must be absent.
  std::vector<FindingRow> resolve_absent(const std::vector<std::string>& scopes,
                                         const std::set<std::string>& seen, double now,
                                         int after_cycles = 1);
  // Resolves these firing findings now, with no hysteresis: an action disproved them (a near
  // miss), so they are no longer true, and showing them firing (status, llmwatch_alerts_firing)
  // for resolve_after_cycles more cycles would say otherwise. Returns those that were firing.
  std::vector<FindingRow> resolve_keys(const std::vector<std::string>& keys, double now);
  // The finding was told now, at `severity` (its own, or what the message said).
  void set_notified(const std::string& key, double now, const std::string& severity);
  std::vector<FindingRow> firing();

  // Action journal. begin_action returns nullopt when idem_key was already journaled
  // (the action must not run again); otherwise the row id, with state 'intent'. A key whose
  // last attempt did nothing lasting is taken again (#26: one sbatch timeout left a crashed
  // run down for good): a dry run, a wait or a withdrawn one at once, a failure after a backoff
  // (kRetryAfter, doubling) and at most kMaxAttempts times in all.
  static constexpr int kMaxAttempts = 3;
  static constexpr double kRetryAfter = 60;
  std::optional<std::int64_t> begin_action(const std::string& idem_key, const std::string& kind,
                                           const std::string& subject, const std::string& reason,
                                           double now);
  // The same, with what the executor tells of it: how many times the action was begun (1 on
  // its first run), and the state the key was taken again from ("" for a new key).
  struct ActionStart {
    std::int64_t id = 0;
    int attempts = 1;
    std::string retaken_from;
  };
  std::optional<ActionStart> start_action(const std::string& idem_key, const std::string& kind,
                                          const std::string& subject, const std::string& reason,
                                          double now);
  void finish_action(std::int64_t id, const std::string& state, const std::string& detail,
                     double now);
  // A done action undone before it took effect (a queued restart withdrawn before it
  // started): journaled as "withdrawn", so it uses up no budget, and the same key may run again
  // (the task crashes for good later). False when `idem_key` names no done action.
  bool withdraw_action(const std::string& idem_key, const std::string& why, double now);
  // Actions of `kind` on `subject` ("" for any) that did something, started in [since, until).
  int count_actions(const std::string& kind, const std::string& subject, double since,
                    double until = 1e18);
  // The cancels journaled as done since `since`, by the task each was about (one query a
  // cycle: cancels are few, held to max_cancels_per_hour).
  CancelsByTask cancels_done(double since);
  // Whether llmwatch cancelled exactly this task (`run_key`, "7@1799999000"), by a cancel
  // started since `since`: a cancel of the task before it, in the second this one started, is
  // not one of it.
  bool cancelled_task(const std::string& run_key, double since);
  // Charges one incident to `node` for the end of `task` (a task episode, "7@1799999000"):
  // once, however many findings told of that end (a crash seen while it ran, then its end),
  // and never again once withdrawn.
  // Whether it was charged now.
  bool add_incident(double ts, const std::string& node, const std::string& task,
                    const std::string& message);
  // Withdraws the incidents charged for the ends of `tasks` (task episodes): they are kept in
  // the history as "incident-withdrawn", no longer counted, and each is told ("withdrawn",
  // with `why`). The
  // nodes they were charged to, one per incident withdrawn.
  std::vector<std::string> withdraw_incidents(double ts, const std::vector<std::string>& tasks,
                                              const std::string& why);
  // The suspicion ledger: incidents per node since `since` (crashes attributed to it, GPU
  // warnings and faults). Feeds the lemon drain and every restart's --exclude.
  std::map<std::string, int> incident_counts(double since);
  // How the watched jobs' tasks ended, from the post-mortems kept: (job, class) -> count.
  std::map<std::pair<std::string, std::string>, int> end_counts();
  std::vector<ActionRow> recent_actions(int limit);
  // Actions journaled as intent before `before` and never finished: llmwatch stopped (a
  // crash, a full disk) between deciding and recording the outcome.
  std::vector<ActionRow> unfinished_actions(double before);

  void add_progress(const std::string& job, double ts, std::int64_t step,
                    std::optional<double> step_time, std::optional<double> loss);
  // (ts, step) of a job's progress rows, oldest first.
  std::vector<std::pair<double, std::int64_t>> progress_steps(const std::string& job);
  // The series around a moment, by index (metrics ask every cycle, for every job; a month of
  // rows each is too many to read): its first row, the last row at or before `ts`, and when
  // `step` was first reached again after `ts`.
  std::optional<double> progress_first(const std::string& job);
  std::optional<std::pair<double, std::int64_t>> progress_at(const std::string& job, double ts);
  std::optional<double> progress_reached(const std::string& job, double after, std::int64_t step);

  // Journaled actions by kind and outcome, for the metrics.
  struct ActionCount {
    std::string kind, state;
    std::int64_t count = 0;
  };
  std::vector<ActionCount> action_counts();
  // Each node's last health summary ("CRITICAL Xid 79 ..."), and the nodes llmwatch drained
  // and has not returned to service, with when (one query each, not one per node).
  std::map<std::string, NodeHealth> node_health();
  std::optional<NodeHealth> node_health(const std::string& node);
  // Records a node's health; false when it is what was recorded already.
  bool put_node_health(const std::string& node, const NodeHealth& health, double now);
  std::map<std::string, double> drained_nodes();
  // The nodes llmwatch asked Slurm to reboot whose reboot is not over, and when it asked.
  std::map<std::string, double> rebooting_nodes();
  // The idle nodes llmwatch asked for a node-check as a short job, and when.
  std::map<std::string, double> idle_checked_nodes();

  // The storage series: one sample per [[storage]] path per cycle, for the growth forecast.
  struct StorageSample {
    double used_bytes = 0, usable_bytes = 0, used_inodes = 0, total_inodes = 0;
  };
  void add_storage_sample(const std::string& path, double ts, const StorageSample& sample);
  // (ts, used_bytes) since `since`, oldest first.
  std::vector<std::pair<double, double>> storage_used_series(const std::string& path, double since);

  void record_cycle(double started, double finished, const std::string& host, int pid, int findings,
                    int actions, int unknown_probes);
  // Drops events, progress and cycles older than `before` so the file stays bounded, and thins
  // the progress series older than `thin_before` to a row per job per kSeriesThinEvery.
  void compact(double before, double thin_before);
  // Removes the per-job keys (kv::kJobKeyPrefixes) of every label not in `kept` that have not
  // changed since `before`: a [[job]] taken out of the config keeps its state (its last view,
  // stacks, goodput place) for keep_history, then leaves none behind. Returns the keys removed.
  int forget_jobs(const std::set<std::string>& kept, double before);
  static constexpr double kSeriesThinEvery = 600;
  static constexpr double kSeriesThinStep = 86400;  // the most thinned by one compaction

 private:
  FindingRow mark_resolved(const FindingRow& row, double now);

  // Raw SQL stays in store/: the journal shares the connection, tests reach it through
  // StoreTestAccess.
  friend class AlertJournal;
  friend class GoodputLedger;
  friend struct StoreTestAccess;
  Db& db() { return db_; }
  // node -> time, for every non-empty kv row under `prefix` (drained:, rebooting:).
  std::map<std::string, double> node_times(const std::string& prefix);
  struct KnownProgress {
    std::string text;  // the hot part as last read or written
    JobProgress parsed;
    double cold_at = 0;  // when this process last wrote the cold part
    // The cold part may differ from what is stored: it changed since this process last wrote
    // it, or was read (another writer's, or a whole document without a cold row).
    bool cold_dirty = true;
  };
  // Checks the kv memo against other connections' commits; called at a transaction's start.
  void trust_kv_memo();
  void forget_telemetry_known();
  Db db_;
  std::map<std::string, KnownProgress> progress_;
  // What this process last stored or read of a node's telemetry series; trusted as kv_ is, and
  // forgotten with it.
  struct KnownSeries {
    double newest = 0;                              // its newest sample's time (-inf: none)
    std::shared_ptr<const TelemetrySeries> series;  // the series parsed, when it was read
  };
  std::unordered_map<std::string, KnownSeries> telemetry_;
  std::size_t series_parsed_ = 0;  // how many of telemetry_ hold a series
  std::map<std::string, std::pair<std::string, std::optional<SlurmJob>>>
      last_jobs_;  // text, parsed
  struct KnownGoodput {
    std::string text;   // as stored
    GoodputState live;  // as this process left it: ahead of `text` while looks are pending
    std::map<std::tuple<std::int64_t, std::string, std::string, std::string>, double> pending;
    double flushed_at = 0;  // when it was last written (0: not by this process)
    bool dirty = false;     // `live` is ahead of `text`
    // The pending looks from day `since_day`, as the ledger's rows of run `job`.
    void pending_rows(const std::string& job, std::int64_t since_day,
                      std::vector<GoodputRow>& rows) const;
  };
  KnownGoodput& known_goodput(const std::string& job);
  void write_goodput(const std::string& job, KnownGoodput& known, double now);
  std::map<std::string, KnownGoodput> goodput_states_;
  KvMemo kv_;
  bool kv_trusted_ = false;  // inside a transaction whose start checked kv_
};

}  // namespace llmwatch

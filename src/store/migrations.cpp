#include "store/migrations.h"

namespace llmwatch {

const std::vector<std::string>& schema_migrations() {
  static const std::vector<std::string> migrations = {
      // 1: the first schema.
      R"sql(
      CREATE TABLE events (
        id INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL,
        severity TEXT NOT NULL, message TEXT NOT NULL, data TEXT NOT NULL DEFAULT '{}');
      CREATE INDEX events_ts ON events(ts);
      CREATE INDEX events_subject ON events(subject, ts);
      -- One row per finding key; state is 'firing' or 'resolved'.
      CREATE TABLE findings (
        key TEXT PRIMARY KEY, severity TEXT NOT NULL, summary TEXT NOT NULL,
        evidence TEXT NOT NULL DEFAULT '[]', state TEXT NOT NULL, first_seen REAL NOT NULL,
        last_seen REAL NOT NULL, resolved_at REAL, notified_at REAL);
      -- The action journal: intent is written before the action runs, outcome after.
      -- idem_key makes an action idempotent: the same key never runs twice.
      CREATE TABLE actions (
        id INTEGER PRIMARY KEY, idem_key TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
        subject TEXT NOT NULL, reason TEXT NOT NULL, state TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '', started REAL NOT NULL, finished REAL);
      CREATE INDEX actions_kind ON actions(kind, started);
      CREATE TABLE progress (
        job TEXT NOT NULL, ts REAL NOT NULL, step INTEGER NOT NULL, step_time REAL, loss REAL);
      CREATE INDEX progress_job ON progress(job, ts);
      CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated REAL NOT NULL);
      CREATE TABLE cycles (
        id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL NOT NULL,
        host TEXT NOT NULL, pid INTEGER NOT NULL, findings INTEGER NOT NULL,
        actions INTEGER NOT NULL, unknown_probes INTEGER NOT NULL);
      )sql",
      // 2: alert delivery journal, silences, and resolve hysteresis.
      R"sql(
      -- One row per (alert message, channel). Pending rows are retried with backoff until
      -- sent; a crash between sending and recording can resend once (at-least-once).
      CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY, channel TEXT NOT NULL, alert_key TEXT NOT NULL,
        message TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt REAL NOT NULL, last_error TEXT NOT NULL DEFAULT '', created REAL NOT NULL,
        sent_at REAL);
      CREATE INDEX deliveries_pending ON deliveries(state, next_attempt);
      CREATE TABLE silences (
        id INTEGER PRIMARY KEY, pattern TEXT NOT NULL, until REAL NOT NULL, reason TEXT NOT NULL,
        created_by TEXT NOT NULL, created REAL NOT NULL);
      ALTER TABLE findings ADD COLUMN missing INTEGER NOT NULL DEFAULT 0;
      )sql",
      // 3: storage usage series, for time-to-full forecasts.
      R"sql(
      CREATE TABLE storage_series (
        path TEXT NOT NULL, ts REAL NOT NULL, used_bytes REAL NOT NULL, usable_bytes REAL NOT NULL,
        used_inodes REAL NOT NULL, total_inodes REAL NOT NULL);
      CREATE INDEX storage_series_path ON storage_series(path, ts);
      )sql",
      // 4: kv clustered by its key. A cycle rewrites every watched job's progress row; in a
      // rowid table a job's rows sat together with its other rows (all made in one cycle), so
      // 1,000 progress rows touched most pages of kv, each written twice (journal and file).
      // In key order they share a hundred pages.
      R"sql(
      CREATE TABLE kv_by_key (
        key TEXT PRIMARY KEY, value TEXT NOT NULL, updated REAL NOT NULL) WITHOUT ROWID;
      INSERT INTO kv_by_key SELECT key, value, updated FROM kv;
      DROP TABLE kv;
      ALTER TABLE kv_by_key RENAME TO kv;
      )sql",
      // 5: attempts of an action that failed and is retried (#26), and the episode a finding
      // is about (a task's end, its crash): a firing finding whose
      // episode changes is a new finding under the same key, acted on again (#25).
      R"sql(
      ALTER TABLE findings ADD COLUMN episode TEXT NOT NULL DEFAULT '';
      ALTER TABLE actions ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
      )sql",
      // 6: the goodput ledger (#29): GPU-seconds per UTC day, run, bucket, cause and node,
      // summed as they are charged. Totals from the start: compacting old progress rows never
      // touches them, and a year is at most 365 rows per run and bucket.
      R"sql(
      CREATE TABLE goodput (
        day INTEGER NOT NULL, job TEXT NOT NULL, bucket TEXT NOT NULL, cause TEXT NOT NULL,
        node TEXT NOT NULL, gpu_seconds REAL NOT NULL,
        PRIMARY KEY (day, job, bucket, cause, node)) WITHOUT ROWID;
      )sql",
      // 7: the severity a firing finding was last told at: one that gets worse within its
      // episode (a disk from 85 % to 97 %) is told again at once, not at the next repeat.
      R"sql(
      ALTER TABLE findings ADD COLUMN notified_severity TEXT NOT NULL DEFAULT '';
      )sql",
      // 8: a node's GPU telemetry (#28), a row a sample: a new sample is one row written, not
      // the node's whole series (16 samples, 31 KB at 8 GPUs) rewritten, at every node-check of
      // every node a watched task runs on. The series kept in kv before hold minutes of
      // evidence; they are dropped, and the next node-checks begin them again.
      R"sql(
      -- A rowid table: a sample of 8 GPUs is ~2 KB, far past what suits WITHOUT ROWID.
      CREATE TABLE gpu_telemetry (node TEXT NOT NULL, ts REAL NOT NULL, gpus TEXT NOT NULL);
      CREATE UNIQUE INDEX gpu_telemetry_node ON gpu_telemetry(node, ts);
      DELETE FROM kv WHERE key >= 'gputelemetry:' AND key < 'gputelemetry;';
      )sql",
  };
  return migrations;
}

int schema_version(Db& db) {
  auto st = db.prepare("PRAGMA user_version");
  st.step();
  return static_cast<int>(st.integer(0));
}

int migrate(Db& db) {
  const auto& migrations = schema_migrations();
  int version = schema_version(db);
  if (version > static_cast<int>(migrations.size()))
    throw DbError("state store has schema version " + std::to_string(version) +
                  ", newer than this llmwatch (" + std::to_string(migrations.size()) +
                  "); upgrade llmwatch");
  for (int v = version; v < static_cast<int>(migrations.size()); ++v) {
    db.transaction([&] {
      db.exec(migrations[v]);
      db.exec("PRAGMA user_version = " + std::to_string(v + 1));
    });
  }
  return schema_version(db);
}

}  // namespace llmwatch

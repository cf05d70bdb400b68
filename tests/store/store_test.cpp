#include "store/store.h"

#include <gtest/gtest.h>

#include "store/keys.h"
#include "store/migrations.h"
#include "store_test_access.h"
#include "test_util.h"

namespace llmwatch {
namespace {

Finding finding(const std::string& key, Severity sev = Severity::Critical) {
  Finding f;
  f.key = key;
  f.severity = sev;
  f.summary = "summary of " + key;
  f.evidence = {"line \"one\"", "line two"};
  return f;
}

TEST(Migrations, FreshStoreIsAtTheLatestVersionAndReopens) {
  testing::TempDir dir;
  {
    Store store(dir.path);
    EXPECT_EQ(schema_version(StoreTestAccess::db(store)),
              static_cast<int>(schema_migrations().size()));
    store.put("k", "v", 1);
  }
  Store again(dir.path);  // migrating an up-to-date store is a no-op and keeps the data
  EXPECT_EQ(again.get("k"), "v");
}

// Version 4 clusters kv by key (a cycle's 1,000 progress rows then share a hundred pages):
// a store made before keeps every row.
TEST(Migrations, KvRowsSurviveTheMoveToAKeyOrderedTable) {
  testing::TempDir dir;
  {
    Db db(Store::db_path(dir.path));
    for (int v = 0; v < 3; ++v) db.exec(schema_migrations()[v]);
    db.exec("PRAGMA user_version = 3");
    db.exec("INSERT INTO kv VALUES('progress:tr', '{\"step\":7}', 5), ('nodes', '{}', 6)");
  }
  Store store(dir.path);
  EXPECT_EQ(store.get("progress:tr"), "{\"step\":7}");
  EXPECT_EQ(store.get("nodes"), "{}");
  auto st = StoreTestAccess::db(store).prepare("SELECT sql FROM sqlite_master WHERE name = 'kv'");
  ASSERT_TRUE(st.step());
  EXPECT_NE(st.text(0).find("WITHOUT ROWID"), std::string::npos) << st.text(0);
  store.put("progress:tr", "{\"step\":8}", 7);
  EXPECT_EQ(store.get("progress:tr"), "{\"step\":8}");
}

// Version 8 keeps a node's GPU telemetry a row a sample: the series kept whole in kv before
// (minutes of evidence) are dropped, every other kv row is kept, and the table takes samples.
TEST(Migrations, TelemetrySeriesInKvMakeWayForARowASample) {
  testing::TempDir dir;
  {
    Db db(Store::db_path(dir.path));
    for (int v = 0; v < 7; ++v) db.exec(schema_migrations()[v]);
    db.exec("PRAGMA user_version = 7");
    db.exec(
        "INSERT INTO kv VALUES('gputelemetry:node-1', '{\"ts\":5,\"gpus\":[]}', 5), "
        "('gputelemetry:node-2', '[]', 5), ('nodehealth:node-1', 'OK fine', 6)");
  }
  Store store(dir.path);
  EXPECT_FALSE(store.get("gputelemetry:node-1"));
  EXPECT_FALSE(store.get("gputelemetry:node-2"));
  EXPECT_EQ(store.get("nodehealth:node-1"), "OK fine");
  store.add_telemetry_sample("node-1", {10, {}});
  ASSERT_EQ(store.telemetry_series("node-1")->size(), 1u);
  EXPECT_EQ((*store.telemetry_series("node-1"))[0].ts, 10);
}

TEST(Migrations, StoreFromANewerLlmwatchIsRefused) {
  testing::TempDir dir;
  {
    Db db(Store::db_path(dir.path));
    db.exec("PRAGMA user_version = 999");
  }
  try {
    Store store(dir.path);
    FAIL() << "opened a newer store";
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this llmwatch"), std::string::npos);
  }
}

TEST(Migrations, UsesARollbackJournalNotWal) {
  testing::TempDir dir;
  Store store(dir.path);
  auto st = StoreTestAccess::db(store).prepare("PRAGMA journal_mode");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "delete");
}

// A long-lived Store keeps the progress it last read or wrote, parsed (the daemon reads and
// rewrites 1,000 of them a cycle). What another process wrote, or a write that rolled back,
// must still be what the next read returns.
TEST(Store, ProgressKeptInMemoryNeverHidesAnotherWriteOrARollback) {
  testing::TempDir dir;
  Store daemon(dir.path), other(dir.path);
  JobProgress p;
  p.task = "7";
  p.step = 10;
  daemon.put_progress("tr", p, 1);
  EXPECT_EQ(other.progress("tr").step, 10);
  p.step = 11;
  other.put_progress("tr", p, 2);  // another process (a takeover after a failover)
  EXPECT_EQ(daemon.progress("tr").step, 11);
  p.step = 12;
  EXPECT_THROW(daemon.transaction([&] {
    daemon.put_progress("tr", p, 3);
    throw std::runtime_error("disk full");
  }),
               std::runtime_error);
  EXPECT_EQ(other.progress("tr").step, 11);
  daemon.put_progress("tr", p, 4);  // the same write again: it must reach the file this time
  EXPECT_EQ(other.progress("tr").step, 12);
  EXPECT_EQ(daemon.progress("tr").step, 12);
  EXPECT_EQ(daemon.progress("none").task, "");  // nothing stored: empty progress
}

// A cycle puts every watched job's view and state; most are what they were a cycle ago. An
// unchanged value is not rewritten (no page to journal), a changed one is.
// The cold part of a job's progress (baselines, evidence lines: most of its bytes) is written
// at most every kColdEvery, and at once for a new task or a crash; the hot part every time.
// The daemon itself always reads what it holds.
TEST(Store, TheColdPartOfProgressIsWrittenLessOftenButNeverLostForANewTaskOrACrash) {
  testing::TempDir dir;
  Store daemon(dir.path), other(dir.path);
  JobProgress p;
  p.task = "7";
  p.step = 1;
  p.recent = {"step 1"};
  daemon.put_progress("tr", p, 1000);
  EXPECT_EQ(other.progress("tr").recent, p.recent);
  p.step = 2;
  p.recent.push_back("step 2");
  daemon.put_progress("tr", p, 1030);
  EXPECT_EQ(other.progress("tr").step, 2);                                     // hot: at once
  EXPECT_EQ(other.progress("tr").recent, std::vector<std::string>{"step 1"});  // cold: later
  EXPECT_EQ(daemon.progress("tr").recent.size(), 2u);  // the daemon reads what it holds
  p.step = 3;  // new lines come with new reads: the hot part changes with the cold
  daemon.put_progress("tr", p, 1000 + Store::kColdEvery);
  EXPECT_EQ(other.progress("tr").recent.size(), 2u);
  p.crash = "cuda-error";
  p.recent.push_back("CUDA error: an illegal memory access");
  daemon.put_progress("tr", p, 1000 + Store::kColdEvery + 30);  // a crash: at once
  EXPECT_EQ(other.progress("tr").recent.back(), "CUDA error: an illegal memory access");
  start_task(p, "8", "/log", 1400);
  p.recent = {"starting"};
  daemon.put_progress("tr", p, 1000 + Store::kColdEvery + 60);  // a new task: at once
  EXPECT_EQ(other.progress("tr").task, "8");
  EXPECT_EQ(other.progress("tr").recent, std::vector<std::string>{"starting"});
}

// An unchanged cold part is not serialised again (its fields are compared instead); one this
// process read rather than wrote may not be stored as a cold row at all (a whole document from
// an older llmwatch), so the next put writes it, and nothing is lost when the hot part drops it.
TEST(Store, AColdPartReadFromAWholeDocumentIsWrittenAtTheNextPut) {
  testing::TempDir dir;
  Store daemon(dir.path), other(dir.path);
  JobProgress p;
  p.task = "7";
  p.step = 1;
  p.recent = {"step 1"};
  p.step_times = {1.5};
  other.put(kv::progress("tr"), p.to_json(), 1000);
  JobProgress read = daemon.progress("tr");
  ASSERT_EQ(read.recent, p.recent);
  read.step = 2;
  daemon.put_progress("tr", read, 1010);
  Store fresh(dir.path);
  EXPECT_EQ(fresh.progress("tr").step, 2);
  EXPECT_EQ(fresh.progress("tr").recent, p.recent);
  EXPECT_EQ(fresh.progress("tr").step_times, p.step_times);
  // Changed when not due, then unchanged: written when due all the same.
  read.recent.push_back("step 2");
  daemon.put_progress("tr", read, 1040);
  EXPECT_EQ(Store(dir.path).progress("tr").recent.size(), 1u);
  read.step = 3;
  daemon.put_progress("tr", read, 1010 + Store::kColdEvery);
  EXPECT_EQ(Store(dir.path).progress("tr").recent.size(), 2u);
}

TEST(Store, AnUnchangedValueIsNotRewritten) {
  testing::TempDir dir;
  Store store(dir.path);
  store.put("view/tr", "{\"entries\":[]}", 1);
  store.put("view/tr", "{\"entries\":[]}", 2);
  EXPECT_EQ(StoreTestAccess::db(store).changes(), 0);
  store.put("view/tr", "{\"entries\":[1]}", 3);
  EXPECT_EQ(StoreTestAccess::db(store).changes(), 1);
  EXPECT_EQ(store.get("view/tr"), "{\"entries\":[1]}");
}

TEST(Store, FindingLifecycleNewOngoingResolved) {
  testing::TempDir dir;
  Store store(dir.path);
  EXPECT_EQ(store.observe(finding("job:a/hung"), 100), FindingChange::New);
  EXPECT_EQ(store.observe(finding("job:a/hung"), 110), FindingChange::Ongoing);
  EXPECT_EQ(store.observe(finding("job:b/absent"), 110), FindingChange::New);
  // job:a was evaluated and its finding is gone; job:b's scope was not evaluated (unknown).
  auto resolved = store.resolve_absent({"job:a/"}, {}, 120);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].key, "job:a/hung");
  EXPECT_DOUBLE_EQ(resolved[0].first_seen, 100);
  auto firing = store.firing();
  ASSERT_EQ(firing.size(), 1u);
  EXPECT_EQ(firing[0].key, "job:b/absent");
  // It fires again later as a new episode.
  EXPECT_EQ(store.observe(finding("job:a/hung"), 200), FindingChange::New);
}

TEST(Store, ActionJournalIsIdempotent) {
  testing::TempDir dir;
  Store store(dir.path);
  auto id = store.begin_action("cancel:3_1", "cancel", "tr11", "hung", 100);
  ASSERT_TRUE(id);
  EXPECT_FALSE(store.begin_action("cancel:3_1", "cancel", "tr11", "hung", 101));  // never twice
  store.finish_action(*id, "done", "scancel 3_1", 102);
  auto recent = store.recent_actions(5);
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].state, "done");
  EXPECT_EQ(recent[0].detail, "scancel 3_1");
}

TEST(Store, ActionBudgetsIgnoreDryRunsAndOldEntries) {
  testing::TempDir dir;
  Store store(dir.path);
  auto a = store.begin_action("restart:1", "restart", "tr11", "", 100);
  store.finish_action(*a, "done", "", 100);
  auto b = store.begin_action("restart:2", "restart", "tr11", "", 5000);
  store.finish_action(*b, "done", "", 5000);
  auto c = store.begin_action("restart:3", "restart", "tr11", "", 5001);
  store.finish_action(*c, "dry-run", "", 5001);
  auto d = store.begin_action("restart:4", "restart", "other", "", 5002);
  store.finish_action(*d, "done", "", 5002);
  EXPECT_EQ(store.count_actions("restart", "tr11", 1000), 1);
  EXPECT_EQ(store.count_actions("restart", "", 1000), 2);
  EXPECT_EQ(store.count_actions("restart", "tr11", 0), 2);
}

// Every cancel done of each task (the first and each issued again), when the last returned;
// a cancel that failed, was a dry run, or is too old is none.
TEST(Store, CancelsDoneAreCountedByTask) {
  testing::TempDir dir;
  Store store(dir.path);
  auto journal = [&](const std::string& key, const std::string& state, double at) {
    auto id = store.begin_action(key, key.substr(0, key.find(':')), "tr11", "hung", at);
    ASSERT_TRUE(id) << key;
    store.finish_action(*id, state, "", at + 1);
  };
  journal("cancel:3_1@17", "done", 100);
  journal("cancel:3_1@17/again-1", "done", 200);
  journal("cancel:3_2@18", "failed", 300);
  journal("cancel:3_3@19", "dry-run", 300);
  journal("cancel:3_4@20", "done", 10);
  journal("restart:3_1@17", "done", 300);
  auto cancels = store.cancels_done(50);
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels["3_1@17"].count, 2);
  EXPECT_DOUBLE_EQ(cancels["3_1@17"].last_at, 201);
}

TEST(Store, EventsFilterBySubjectAndTimeAndCompact) {
  testing::TempDir dir;
  Store store(dir.path);
  store.add_event(10, "finding", "tr11", "critical", "old");
  store.add_event(100, "finding", "tr11", "critical", "new");
  store.add_event(101, "action", "other", "info", "x");
  auto events = store.events(50, "tr11", 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message, "new");
  store.compact(50, 50);
  EXPECT_EQ(store.events(0, "", 10).size(), 2u);
}

// Every per-job key of a label no longer configured goes once it is older than `before`; a
// configured label's keys, a recent one's, and keys that are not a job's stay.
TEST(Store, ForgetJobsRemovesTheKeysOfLabelsNoLongerConfigured) {
  testing::TempDir dir;
  Store store(dir.path);
  auto keys_of = [](const std::string& job) {
    return std::vector<std::string>{
        kv::progress(job),     kv::progress_cold(job),  kv::last_job(job),
        kv::goodput(job),      kv::post_mortem(job),    kv::megatron_timers(job),
        kv::job_view(job),     kv::near_miss(job),      kv::stacks(job),
        kv::hang_confirm(job), kv::save_requested(job), kv::allocation_checked(job)};
  };
  for (const char* job : {"gone", "kept", "recent"})
    for (const auto& key : keys_of(job))
      store.put(key, "x", std::string(job) == "recent" ? 1000 : 100);
  store.put(kv::node_health("gone"), "OK fine", 100);  // a node, not a job
  EXPECT_EQ(store.get(kv::job_view("gone")), "x");     // and remembered in memory
  EXPECT_EQ(store.forget_jobs({"kept"}, 500), 12);
  for (const auto& key : keys_of("gone")) EXPECT_FALSE(store.get(key)) << key;
  for (const char* job : {"kept", "recent"})
    for (const auto& key : keys_of(job)) EXPECT_EQ(store.get(key), "x") << key;
  EXPECT_EQ(store.get(kv::node_health("gone")), "OK fine");
  Store reopened(dir.path);
  EXPECT_FALSE(reopened.get(kv::job_view("gone")));
  EXPECT_EQ(store.forget_jobs({"kept"}, 500), 0);
}

// The progress series is kept whole for a day, then one row per job per 10 minutes: at 1,000
// jobs a row a minute was ~100 MiB of state a day, 3 GB over keep_history. A failure older
// than a day has its lost time read from rows at most 10 minutes apart.
TEST(Store, CompactionThinsTheProgressSeriesOlderThanADay) {
  testing::TempDir dir;
  Store store(dir.path);
  const double now = 1'700'000'000;
  const double day = 86400;
  for (int minute = 0; minute < 3 * 24 * 60; ++minute) {  // three days, a row a minute
    double ts = now - 3 * day + 60 * minute;
    store.add_progress("a", ts, minute, 10.0, 2.0);
    store.add_progress("b", ts, 2 * minute, 10.0, 2.0);
  }
  auto rows_between = [&](const std::string& job, double from, double to) {
    int n = 0;
    for (const auto& [ts, step] : store.progress_steps(job)) n += ts >= from && ts < to;
    return n;
  };
  // A day at a time (hourly compactions catch up on a month in a day).
  store.compact(now - 30 * day, now - day);
  EXPECT_EQ(rows_between("a", now - 2 * day, now - day), 24 * 60);
  store.compact(now - 30 * day, now - day);
  for (const std::string job : {"a", "b"}) {
    int old = rows_between(job, now - 3 * day, now - day);
    EXPECT_GE(old, 2 * 24 * 6) << job;      // at least one per 10 minutes
    EXPECT_LE(old, 2 * 24 * 6 + 2) << job;  // and no more (a bucket cut by the window's edge)
    EXPECT_EQ(rows_between(job, now - day, now), 24 * 60) << job;  // the last day whole
  }
  // Around an old moment: the row at or before it is at most 10 minutes earlier.
  auto at = store.progress_at("a", now - 2 * day + 7 * 60);
  ASSERT_TRUE(at.has_value());
  EXPECT_LE(now - 2 * day + 7 * 60 - at->first, 600);
  EXPECT_EQ(store.progress_first("a"), now - 3 * day);  // the first row stays
  // Again an hour later: only the hour that aged is thinned; nothing older changes.
  auto before = store.progress_steps("a").size();
  store.compact(now - 30 * day, now - day);
  EXPECT_EQ(store.progress_steps("a").size(), before);
  store.compact(now + 3600 - 30 * day, now + 3600 - day);
  EXPECT_LE(store.progress_steps("a").size(), before - 60 + 7);
}

// Cached statements: the same SQL nested inside its own iteration gets a fresh statement,
// and a reused one starts clean (no rows or bindings left over).
TEST(Store, CachedStatementsNestAndReset) {
  testing::TempDir dir;
  Store store(dir.path);
  store.put("a", "1", 1);
  store.put("b", "2", 1);
  int outer = 0;
  auto st = StoreTestAccess::db(store).prepare("SELECT key FROM kv ORDER BY key");
  while (st.step()) {
    ++outer;
    EXPECT_EQ(store.get(st.text(0)).value_or(""), st.text(0) == "a" ? "1" : "2");
    auto inner = StoreTestAccess::db(store).prepare(
        "SELECT key FROM kv ORDER BY key");  // in use: a fresh one
    ASSERT_TRUE(inner.step());
    EXPECT_EQ(inner.text(0), "a");
  }
  EXPECT_EQ(outer, 2);
  EXPECT_EQ(store.get("a"), "1");
  EXPECT_FALSE(store.get("missing"));
  EXPECT_EQ(store.get("b"), "2");
}

TEST(Store, UnwritableStateDirIsAClearError) {
  try {
    Store store("/proc/llmwatch-cannot-create");
    FAIL();
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/llmwatch-cannot-create"), std::string::npos);
  }
}

}  // namespace
// Findings are kept with their fields, so views never search event text ("/hung:"); events
// written before that are read the old way.
TEST(Store, FindingEventsAreTyped) {
  testing::TempDir dir;
  Store store(dir.path);
  Finding f = make_finding("job:tr", "tr", "ended", Severity::Critical, "task 7 ended: completed");
  f.cause = "software error";  // the class, whatever the summary says
  store.add_finding_event(10, f);
  store.add_event(20, "finding", "tr", "info", "job:tr/ended: task 9 ended: completed on n1");
  store.add_event(30, "finding", "other", "info", "job:other/hung: no progress");
  auto events = store.finding_events("tr");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].key, "job:tr/ended");
  EXPECT_EQ(events[0].kind, "ended");
  EXPECT_EQ(events[0].cause, "software error");
  EXPECT_EQ(events[1].kind, "ended");
  EXPECT_EQ(events[1].cause, "completed");
}

// A node's health is typed in and out of the store; the row stays the summary the history
// shows, and one written as text by an older llmwatch reads back typed.
TEST(Store, NodeHealthIsTypedAndWrittenOnlyWhenItChanges) {
  testing::TempDir dir;
  Store store(dir.path);
  EXPECT_FALSE(store.node_health("gpu1").has_value());
  NodeHealth critical{Verdict::Critical, "Xid 79 on GPU 3 (fell off the bus)"};
  EXPECT_TRUE(store.put_node_health("gpu1", critical, 1));
  EXPECT_FALSE(store.put_node_health("gpu1", critical, 2));
  EXPECT_EQ(store.get("nodehealth:gpu1"), "CRITICAL Xid 79 on GPU 3 (fell off the bus)");
  EXPECT_EQ(store.node_health("gpu1"), critical);
  store.put("nodehealth:gpu2", "WARN", 3);
  store.put("nodehealth:gpu3", "garbage here", 3);
  auto all = store.node_health();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all["gpu2"].verdict, Verdict::Warn);
  EXPECT_EQ(all["gpu2"].headline, "");
  EXPECT_EQ(all["gpu3"].verdict, Verdict::Unknown);  // never read as OK
}

// The suspicion ledger: an incident withdrawn (a step loop's, the step's and not the node's) is
// kept in the history, no longer counted, and not charged again for the same task's end.
TEST(Ledger, AWithdrawnIncidentIsNeitherCountedNorChargedAgain) {
  testing::TempDir dir;
  Store store(dir.path);
  EXPECT_TRUE(store.add_incident(100, "node-1", "8@1", "tr ended, attributed to node-1"));
  EXPECT_TRUE(store.add_incident(100, "node-2", "9@1", "tr ended, attributed to node-2"));
  EXPECT_FALSE(store.add_incident(110, "node-1", "8@1", "the same end told again"));
  EXPECT_EQ(store.withdraw_incidents(200, {"8@1", "7@1"}, "the step, not the node"),
            std::vector<std::string>{"node-1"});
  EXPECT_EQ(store.incident_counts(0), (std::map<std::string, int>{{"node-2", 1}}));
  EXPECT_FALSE(store.add_incident(300, "node-1", "8@1", "its node-check came back"));
  EXPECT_EQ(store.incident_counts(0), (std::map<std::string, int>{{"node-2", 1}}));
  EXPECT_TRUE(store.withdraw_incidents(400, {"8@1"}, "again").empty());
  std::map<std::string, int> kinds;
  for (const auto& e : store.events(0, "node-1", 10)) ++kinds[e.kind];
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"incident-withdrawn", 1}, {"withdrawn", 1}}));
}

}  // namespace llmwatch

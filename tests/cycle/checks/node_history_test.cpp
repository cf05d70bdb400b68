// Each node's history from its node-checks' reports (cycle/checks/node_history.h), in a real
// state store: GPU telemetry kept only where the slow-node rule may ask for it, a report seen
// again costing no rewrite, and another writer's change never hidden by what this one recalls.
#include "cycle/checks/node_history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "rules/gpu_telemetry_series.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

NodeReport report(const std::string& node, double ts) {
  NodeReport r;
  r.node = node;
  r.ts = ts;
  GpuTelemetry t;
  t.gpu = 0;
  t.sm_mhz = 1530;
  t.sm_max_mhz = 1980;
  r.telemetry = {t};
  r.gpus[0] = Verdict::Ok;
  return r;
}

NodeFacts facts_for(const std::string& running_on, double now) {
  NodeFacts facts;
  facts.now = now;
  WatchedTask task;
  task.label = "tr";
  task.task.nodes = running_on;
  facts.running.push_back(task);
  facts.watched = watched_nodes(facts.running);
  return facts;
}

std::size_t samples(Store& store, const std::string& node) {
  return store.telemetry_series(node)->size();
}

// node-9 is managed (its health is recorded) but runs no watched task: no slow-node finding can
// ask for its GPUs, so its series is not kept (at 16,384 managed nodes that was 31 KB each).
TEST(NodeHistory, TelemetryIsKeptOnlyForTheNodesOfWatchedTasks) {
  testing::TempDir dir;
  Store store(dir.path);
  NodeFacts facts = facts_for("node-[1-2]", 1000);
  EXPECT_EQ(facts.watched, (std::set<std::string>{"node-1", "node-2"}));
  for (const char* node : {"node-1", "node-9"}) facts.reports[node] = report(node, 990);
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(samples(store, "node-1"), 1u);
  EXPECT_EQ(samples(store, "node-9"), 0u);
  EXPECT_TRUE(store.node_health("node-9")) << "its health is still recorded";
}

// The same report at the next cycle adds nothing; a newer one adds a sample. A series another
// connection changed (an operator's `sqlite3`, a restored file) is read again, not assumed.
TEST(NodeHistory, AReportSeenAgainAddsNothingAndAnotherWritersChangeIsRead) {
  testing::TempDir dir;
  Store store(dir.path);
  NodeFacts facts = facts_for("node-1", 1000);
  facts.reports["node-1"] = report("node-1", 990);
  record_history(store, facts, Seconds(600));
  facts.now += 30;
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(samples(store, "node-1"), 1u);
  Store(dir.path).forget_telemetry({});  // another connection
  facts.now += 30;
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(samples(store, "node-1"), 1u) << "the sample it recalled was gone: added again";
  facts.reports["node-1"] = report("node-1", 1050);
  facts.now += 30;
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(samples(store, "node-1"), 2u);
}

// A row a sample: the newest 16 are kept, oldest first, each with its GPUs as reported; the
// same node-check read again, or an older one, adds nothing; a sample without a finite time is
// not kept.
TEST(NodeHistory, ANodesSeriesKeepsItsNewest16Samples) {
  testing::TempDir dir;
  Store store(dir.path);
  for (int i = 0; i < 20; ++i) {
    NodeReport r = report("node-1", 100.0 + i);
    r.telemetry[0].sm_mhz = 1000 + i;
    store.add_telemetry_sample("node-1", {r.ts, r.telemetry});
  }
  auto series = *store.telemetry_series("node-1");
  ASSERT_EQ(series.size(), 16u);
  EXPECT_EQ(series.front().ts, 104);
  EXPECT_EQ(series.back().ts, 119);
  GpuTelemetry newest = report("node-1", 0).telemetry[0];
  newest.sm_mhz = 1019;
  EXPECT_EQ(series.back().gpus, std::vector<GpuTelemetry>{newest});
  for (double ts : {119.0, 50.0, double(NAN), double(INFINITY)}) {
    Store other(dir.path);  // knows nothing: asks the table
    other.add_telemetry_sample("node-1", {ts, {}});
    EXPECT_EQ(other.telemetry_series("node-1")->back().ts, 119) << ts;
    EXPECT_EQ(other.telemetry_series("node-1")->size(), 16u) << ts;
  }
  EXPECT_TRUE(store.telemetry_series("node-2")->empty());
}

// Once no watched task runs on a node, the hourly compaction drops its series.
TEST(NodeHistory, ANodeNoWatchedTaskRunsOnLosesItsSeries) {
  testing::TempDir dir;
  Store store(dir.path);
  NodeFacts facts = facts_for("node-[1-2]", 1000);
  for (const char* node : {"node-1", "node-2"}) facts.reports[node] = report(node, 990);
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(store.forget_telemetry({"node-2"}), 1);
  EXPECT_EQ(samples(store, "node-1"), 0u);
  EXPECT_EQ(samples(store, "node-2"), 1u);
  // Forgotten here too: its next report starts a series again.
  facts.reports["node-1"] = report("node-1", 990);
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(samples(store, "node-1"), 1u);
}

// The times of a node's series, oldest first.
std::vector<double> times(const TelemetrySeries& series) {
  std::vector<double> out;
  for (const auto& s : series) out.push_back(s.ts);
  return out;
}

std::vector<double> stored_times(const std::string& dir, const std::string& node) {
  return times(*Store(dir).telemetry_series(node));  // a connection that knows nothing
}

// A series read is kept parsed and handed out again inside a transaction (a standing slow-node
// finding reads its job's every node's series each cycle). What it hands out is always what the
// table holds: after this process adds a sample (the oldest dropped), after another connection
// writes, after a rollback, after the compaction.
TEST(NodeHistory, ASeriesKeptParsedIsAlwaysWhatTheTableHolds) {
  testing::TempDir dir;
  Store store(dir.path);
  for (int i = 0; i < 20; ++i) store.add_telemetry_sample("node-1", {100.0 + i, {}});
  std::shared_ptr<const TelemetrySeries> first, again;
  store.transaction([&] {
    first = store.telemetry_series("node-1");
    again = store.telemetry_series("node-1");
  });
  EXPECT_EQ(first, again) << "read again: parsed again";
  store.transaction([&] {
    store.add_telemetry_sample("node-1", {120, report("node-1", 0).telemetry});
  });
  store.transaction([&] { again = store.telemetry_series("node-1"); });
  EXPECT_EQ(times(*again), stored_times(dir.path, "node-1"));
  EXPECT_EQ(again->back().gpus, report("node-1", 0).telemetry);
  EXPECT_EQ(times(*first).back(), 119) << "a series handed out before is not changed under it";

  Store(dir.path).add_telemetry_sample("node-1", {121, {}});  // another connection
  store.transaction([&] { again = store.telemetry_series("node-1"); });
  EXPECT_EQ(times(*again).back(), 121);

  EXPECT_THROW(store.transaction([&] {
    store.add_telemetry_sample("node-1", {122, {}});
    throw std::runtime_error("disk full");
  }),
               std::runtime_error);
  store.transaction([&] { again = store.telemetry_series("node-1"); });
  EXPECT_EQ(times(*again), stored_times(dir.path, "node-1"));
  EXPECT_EQ(times(*again).back(), 121) << "the rolled-back sample is not handed out";

  store.forget_telemetry({});
  store.transaction([&] { again = store.telemetry_series("node-1"); });
  EXPECT_TRUE(again->empty());
}

// A node-check of node-1 at `ts` whose site check "scratch" warns with `text`, and (`hot`) GPU 2
// at a temperature over [gpu] temperature_warn.
NodeReport warning(double ts, const std::string& text, bool hot = false) {
  NodeReport r = report("node-1", ts);
  r.items.push_back({"check:scratch", -1, Verdict::Warn, "", "scratch: " + text, {}});
  if (hot) r.items.push_back({"temperature", 2, Verdict::Warn, "", "GPU 2: 88 °C", {}});
  r.verdict = Verdict::Warn;
  return r;
}

int incidents(Store& store) {
  auto counts = store.incident_counts(0);
  return counts.count("node-1") ? counts["node-1"] : 0;
}

// The lemon rule counts a node's warnings as incidents: each one that begins, not each node-check
// that words it anew. A site check prints its figure ("/scratch 91.2% used") and a temperature
// its degrees, so the same warning read every 5 minutes was an incident every time its figure
// moved: three checks, and a node that is only warm or nearly full was drained as a lemon.
// A problem that begins (a check or GPU not warning in the last hour) is one.
TEST(NodeHistory, AWarningIsOneIncidentHoweverItsFigureMoves) {
  testing::TempDir dir;
  Store store(dir.path);
  NodeFacts facts = facts_for("node-1", 1000);
  auto check = [&](NodeReport r) {
    facts.now = r.ts + 5;
    facts.reports["node-1"] = std::move(r);
    record_history(store, facts, Seconds(600));
  };
  check(report("node-1", 1000));
  EXPECT_EQ(incidents(store), 0);
  check(warning(1300, "/scratch 91.2% used"));
  EXPECT_EQ(incidents(store), 1);
  check(warning(1600, "/scratch 91.5% used"));
  check(warning(1900, "/scratch 92.0% used"));
  EXPECT_EQ(incidents(store), 1) << "the same warning, its figure moved";
  check(warning(2200, "/scratch 92.0% used", true));
  EXPECT_EQ(incidents(store), 2) << "GPU 2 began to warn too";
  // Hovering at its threshold: it clears and warns again, check after check.
  check(report("node-1", 2500));
  check(warning(2800, "/scratch 90.1% used"));
  check(report("node-1", 3100));
  check(warning(3400, "/scratch 90.0% used"));
  EXPECT_EQ(incidents(store), 2) << "a warning that flaps";
  // A check that could not look (nvidia-smi hung: UNKNOWN) ends no warning either.
  NodeReport blind = report("node-1", 3700);
  blind.items.push_back({"nvidia-smi", -1, Verdict::Unknown, "", "nvidia-smi timed out", {}});
  blind.verdict = Verdict::Unknown;
  check(blind);
  check(warning(4000, "/scratch 90.3% used"));
  EXPECT_EQ(incidents(store), 2) << "UNKNOWN in between";
  // Over an hour healthy, and it warns again: that is one more.
  check(report("node-1", 4300));
  check(warning(4300 + 3700, "/scratch 93.0% used"));
  EXPECT_EQ(incidents(store), 3) << "a warning back after an hour";
  // Each change is still in the node's history: 12 headlines, 3 incidents.
  EXPECT_EQ(store.events(0, "node-1", 100).size(), 3u + 12u);
}

// A failure that a clean pass ended and that comes back (a lemon failing again soon after its
// repair) is a new one, however soon; one seen again at each check while the node is drained,
// or after a check that could not look, is not.
TEST(NodeHistory, AFailureAfterACleanPassIsANewIncident) {
  testing::TempDir dir;
  Store store(dir.path);
  NodeFacts facts = facts_for("node-1", 1000);
  auto check = [&](double ts, Verdict v) {
    NodeReport r = report("node-1", ts);
    if (v == Verdict::Critical)
      r.items.push_back({"xid", 3, v, "drain", "Xid 79 GPU 3: fallen off the bus", {}});
    if (v == Verdict::Unknown)
      r.items.push_back({"nvidia-smi", -1, v, "", "nvidia-smi timed out", {}});
    r.verdict = v;
    facts.now = ts + 5;
    facts.reports["node-1"] = r;
    record_history(store, facts, Seconds(600));
  };
  check(1000, Verdict::Critical);
  check(1300, Verdict::Critical);
  check(1600, Verdict::Unknown);
  check(1900, Verdict::Critical);
  EXPECT_EQ(incidents(store), 1);
  check(2200, Verdict::Ok);  // repaired
  check(2500, Verdict::Critical);
  EXPECT_EQ(incidents(store), 2);
}

// A state from before problems were kept: a warning that was already the node's headline is
// not charged again by the first cycle after the upgrade.
TEST(NodeHistory, AWarningKnownBeforeProblemsWereKeptIsNoNewIncident) {
  testing::TempDir dir;
  Store store(dir.path);
  NodeFacts facts = facts_for("node-1", 1000);
  NodeReport r = warning(990, "/scratch 91.2% used");
  store.put_node_health("node-1", {r.verdict, r.headline()}, 900);
  facts.reports["node-1"] = r;
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(incidents(store), 0);
  facts.reports["node-1"] = warning(1290, "/scratch 91.2% used", true);
  facts.now = 1300;
  record_history(store, facts, Seconds(600));
  EXPECT_EQ(incidents(store), 1) << "one that begins after it is";
}

}  // namespace
}  // namespace llmwatch

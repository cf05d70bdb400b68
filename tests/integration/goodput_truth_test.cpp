// The goodput ledger against the truth (#29), on the real local cluster. A scripted run whose
// trainer writes down when each thing really happened (examples/fake-trainer.sh, FAKE_TRUTH):
// it loads, trains, saves, crashes on its node at step 25, is restarted by llmwatch, redoes
// the steps since its checkpoint, hangs at step 45, is found, cancelled and restarted, redoes
// again and finishes. The daemon watches it as it would any run. Its buckets must match the
// truth within 2% of the total and sum to it exactly; the crash's rework is the crash's node's.
#include <cmath>
#include <fstream>
#include <sstream>

#include "local_cluster.h"
#include "rules/goodput.h"
#include "slurm/slurm_text.h"

namespace llmwatch::testing {
namespace {

constexpr double kGpus = 4;

struct Event {
  double t;
  std::string what;
  long step;
};

std::vector<Event> read_truth(const std::string& path) {
  std::vector<Event> out;
  std::ifstream in(path);
  for (Event e; in >> e.t >> e.what >> e.step;) out.push_back(e);
  return out;
}

struct Allocation {
  std::string id;
  double start = 0, end = 0;
};

// Slurm's own start and end of a task (1 s resolution, as the allocation is billed).
Allocation allocation_of(const LocalCluster& c, const std::string& id) {
  auto show = parse_scontrol_show(c.slurm({"scontrol", "show", "job", id}).out);
  Allocation a{id};
  if (show.empty()) return a;
  a.start = static_cast<double>(slurm_timestamp(show.front()["StartTime"]));
  a.end = static_cast<double>(slurm_timestamp(show.front()["EndTime"]));
  return a;
}

// The true buckets, in GPU-seconds, from the tasks' allocations and the trainer's events.
std::map<std::string, double> true_buckets(const std::vector<Allocation>& tasks,
                                           const std::vector<Event>& events) {
  std::map<std::string, double> b;
  long best = -1;
  for (size_t k = 0; k < tasks.size(); ++k) {
    const auto& a = tasks[k];
    if (k > 0) b["queue"] += a.start - tasks[k - 1].end;
    std::vector<Event> mine;
    for (const auto& e : events)
      if (e.t >= a.start && e.t <= a.end + 1) mine.push_back(e);
    double last = a.start, save_began = 0, saving = 0;
    bool stepped = false, hung = false;
    long best_before = best;
    for (const auto& e : mine) {
      if (e.what == "save_begin") save_began = e.t;
      if (e.what == "save_end") {
        b["checkpoint"] += e.t - save_began;
        saving += e.t - save_began;
      }
      if (e.what == "hang") hung = true;
      if (e.what != "step") continue;
      double span = e.t - last - saving;
      if (!stepped)
        b["startup"] += span;
      else
        b[e.step <= best_before ? "rework" : "productive"] += span;
      stepped = true;
      last = e.t;
      saving = 0;
      best = std::max(best, e.step);
    }
    b[hung ? "hang" : "idle end"] += a.end - last - saving;  // a last save is the checkpoint's
  }
  for (auto& [k, v] : b) v *= kGpus;
  return b;
}

TEST(GoodputTruth, TheLedgerMatchesAScriptedRunsKnownTimes) {
  LLMWATCH_REQUIRE_CLUSTER();
  // Slurm remembers the ended tasks for the whole test (its default is 300 s): their start and
  // end are the truth's allocations.
  LocalCluster c(4, {{"LLMWATCH_CLUSTER_MIN_JOB_AGE", "600"}});
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string work = c.dir / "work", config = c.dir / "llmwatch.toml";
  std::string state = c.dir / "state";
  std::filesystem::create_directories(work);
  write_file(config, "[llmwatch]\nstate_dir = \"" + state +
                         "\"\ninterval = \"2s\"\n[slurm]\ntimeout = \"5s\"\n[[job]]\n" +
                         job_owner() +
                         "name = \"itest-goodput\"\ngpus = 4\nstale_floor = \"8s\"\n"
                         "first_steps_grace = \"8s\"\nstale_ceiling = \"1m\"\n"
                         "startup_grace = \"1m\"\n");
  write_file(work + "/crash-at", "25 nccl\n");
  write_file(work + "/hang-at", "45\n");
  BackgroundProcess daemon({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  // The daemon looks at the run before it is submitted: its first task is counted from its
  // start.
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(state + "/state.db"); }, 30));
  // The run's settings live in its batch script, as a real run's do: a restart resubmits the
  // script, never the environment it was first submitted with.
  std::string script = work + "/train.sh";
  write_file(script, "#!/bin/bash\nexport FAKE_TRAINER_DIR=" + work +
                         " FAKE_STEP_TIME=1 FAKE_CKPT_EVERY=10 FAKE_SAVE_SECONDS=3 "
                         "FAKE_LOAD_SECONDS=3 FAKE_TEARDOWN_SECONDS=2 FAKE_MAX_STEPS=60 "
                         "FAKE_TRUTH=" +
                         work + "/truth\nexec " + source_dir() + "/examples/fake-trainer.sh\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add);
  auto sub = c.slurm({"sbatch", "--parsable", "--job-name=itest-goodput", "--nodes=1",
                      "--chdir=" + work, "--output=" + work + "/train-%j.out", script});
  ASSERT_TRUE(sub.ok()) << sub.err;
  // Every task of the run, in order, as Slurm ran them, until the last one finished.
  std::vector<std::string> ids = {sub.out.substr(0, sub.out.find_first_of(";\n"))};
  auto ran_to_the_end = [&] {
    for (const auto& j : c.jobs()) {
      std::string id = std::to_string(j["job_id"].get<long long>());
      if (j["name"] == "itest-goodput" && std::find(ids.begin(), ids.end(), id) == ids.end())
        ids.push_back(id);
    }
    // The trainer's own word that it reached the end (a restart keeps the first task's
    // output file), and Slurm's that the last task completed.
    return read_file(work + "/truth").find(" exit 60") != std::string::npos &&
           c.slurm({"scontrol", "show", "job", ids.back()}).out.find("JobState=COMPLETED") !=
               std::string::npos;
  };
  ASSERT_TRUE(eventually(ran_to_the_end, 240))
      << read_file(work + "/truth") << c.slurm({"scontrol", "show", "job", ids.back()}).out
      << llmwatch(config, {"events"}).out;
  ASSERT_EQ(ids.size(), 3u) << llmwatch(config, {"events"}).out;
  std::vector<Allocation> tasks;
  for (const auto& id : ids) tasks.push_back(allocation_of(c, id));
  // The daemon has seen the last task end once its post-mortem is made.
  auto post_mortems = [&] {
    return llmwatch_sql(state, "select count(*) from kv where key like 'postmortem:%'");
  };
  ASSERT_TRUE(eventually(
      [&] {
        return llmwatch(config, {"events"}).out.find("task " + ids.back() + " ended") !=
               std::string::npos;
      },
      60))
      << llmwatch(config, {"events"}).out << post_mortems();
  // One more look, so that nothing stays open.
  auto cycles = [&] { return llmwatch_sql(state, "select count(*) from cycles"); };
  std::string seen = cycles();
  ASSERT_TRUE(eventually([&] { return cycles() != seen; }, 30));
  kill(daemon.pid, SIGTERM);
  daemon.wait_exit(30);

  auto truth = true_buckets(tasks, read_truth(work + "/truth"));
  auto report = nlohmann::json::parse(
      llmwatch(config, {"goodput", "--since", "1d", "--by", "node", "--json"}).out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << llmwatch(config, {"goodput", "--json"}).out;
  double total = 0, ledger_total = 0;
  for (const auto& [bucket, v] : truth) total += v;
  std::ostringstream table;
  for (const char* bucket : kGoodputBuckets) {
    double ledger = report["gpu_seconds"].value(bucket, 0.0);
    ledger_total += ledger;
    table << bucket << ": ledger " << ledger << " truth " << truth[bucket] << "\n";
  }
  RecordProperty("buckets", table.str());
  // What the ledger holds, and what happened: shown only when a bucket is off.
  std::ostringstream detail;
  detail << llmwatch_sql(state, "select bucket, cause, node, gpu_seconds from goodput");
  detail << std::fixed;  // whole Unix seconds, not 1.79581e+09
  for (const auto& t : tasks) detail << "task " << t.id << " " << t.start << " " << t.end << "\n";
  detail << read_file(work + "/truth");
  std::cout << table.str() << "total " << total << " ledger " << ledger_total << "\n";
  for (const char* bucket : kGoodputBuckets)
    EXPECT_LE(std::abs(report["gpu_seconds"].value(bucket, 0.0) - truth[bucket]), 0.02 * total)
        << bucket << "\n"
        << table.str() << detail.str();
  EXPECT_EQ(report["gpu_seconds"].value("open", 0.0), 0.0);
  EXPECT_LE(std::abs(ledger_total - total), 0.02 * total) << table.str();
  // The crash's rework is charged to the node the crash named: the node the first task ran on.
  auto first_node = parse_scontrol_show(c.slurm({"scontrol", "show", "job", ids[0]}).out);
  ASSERT_FALSE(first_node.empty());
  std::string node = first_node.front()["NodeList"];
  std::string rework_nodes = llmwatch_sql(
      state, "select distinct node from goodput where bucket = 'rework' and cause != 'hang'");
  EXPECT_EQ(rework_nodes, node + "\n") << table.str();
}

}  // namespace
}  // namespace llmwatch::testing

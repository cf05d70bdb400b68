// The slow node on the real local cluster (#28): a 3-node job whose ranks (one per node, started
// by srun) time their compute with the shipped llmwatch_timing.py; node-3's rank computes 1.5×
// longer. llmwatch names node-3 and no other; "alert" touches nothing, "evict" cancels, restarts
// without node-3 and drains it with the reason. Each node's GPUs answer node-check (a stand-in
// nvidia-smi printing the real H100's answer under load); node-3's show a hardware slowdown,
// which the finding and the drain reason name.
#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

// One rank: computes (sleeps) 0.05 s a step, 0.075 s on the slow node, and logs its step. In
// summary mode (LLMWATCH_TIMING_SUMMARY=1, as a large job runs) no rank writes a file of its own:
// every half window the ranks gather their windows and rank 0 writes summary.json. The gather
// here stands in for torch.distributed.all_gather_object, through the shared work directory.
constexpr const char* kRank = R"(import json, os, sys, time
sys.path.insert(0, os.environ["HELPER_DIR"])
from llmwatch_timing import RankTimer
rounds = [0]
def gather(row):
    rounds[0] += 1
    world = int(os.environ["SLURM_NTASKS"])
    d = os.path.join(os.environ["GATHER_DIR"], os.environ["SLURM_JOB_ID"], str(rounds[0]))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "%d.tmp" % row[0]), "w") as f:
        json.dump(row, f)
    os.replace(os.path.join(d, "%d.tmp" % row[0]), os.path.join(d, "%d.json" % row[0]))
    while len([n for n in os.listdir(d) if n.endswith(".json")]) < world:
        time.sleep(0.005)
    return [tuple(json.load(open(os.path.join(d, "%d.json" % r)))) for r in range(world)]
timer = RankTimer(gather=gather)
slow = os.environ.get("SLURMD_NODENAME") == os.environ.get("SLOW_NODE")
for step in range(100000):
    with timer.compute():
        time.sleep(0.075 if slow else 0.05)
    with timer.wait():
        time.sleep(0.01)
    timer.step(step)
    if os.environ.get("SLURM_PROCID") == "0":
        print("global_step: %d" % step, flush=True)
)";

struct SlowRun {
  LocalCluster& c;
  std::string work, timing, config;
  bool summary;
  SlowRun(LocalCluster& cluster, const std::string& mode, bool rank0_summary = false)
      : c(cluster),
        work(c.dir / "work"),
        timing(c.dir / "work/timing"),
        config(c.dir / "llmwatch.toml"),
        summary(rank0_summary) {
    std::filesystem::create_directories(timing);
    write_file(work + "/rank.py", kRank);
    write_file(work + "/train.sh",
               "#!/bin/sh\nexec srun --ntasks-per-node=1 python3 " + work + "/rank.py\n");
    std::filesystem::permissions(work + "/train.sh", std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
    // Every node's GPUs answer as the real H100 under load; node-3's as one its hardware holds
    // back (HW Slowdown, 1095 of 1980 MHz): the telemetry node-check gathers inside the job.
    setenv("FAKE_NVSMI_MODE", "ok", 1);
    setenv("FAKE_NVSMI_QUERY", fixture("gpu/nvidia-smi-query-h100-load.csv").c_str(), 1);
    setenv("FAKE_NVSMI_SLOW_NODE", "node-3", 1);
    setenv("FAKE_NVSMI_SLOW_QUERY",
           fixture("gpu/nvidia-smi-query-h100-load-hw-slowdown.csv").c_str(), 1);
    setenv("FAKE_NVSMI_APPS", "/dev/null", 1);
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\n[slurm]\ntimeout = \"10s\"\n"
                           "[gpu]\nenabled = true\ncollect = \"srun\"\nkernel_log = \"none\"\n"
                           "nvlink = false\nnvidia_smi = \"" +
                           source_dir() + "/tests/helpers/fake-nvidia-smi\"\nnode_state_dir = \"" +
                           (c.dir / "nodestate") + "\"\n[[job]]\n" + job_owner() +
                           "name = \"itest-slow\"\nstartup_grace = \"1m\"\nmax_steps = 10000000\n"
                           "timing_dir = \"" +
                           timing + "\"\non_straggler = \"" + mode + "\"\nevict_after = \"1s\"\n");
  }
  std::string submit() {
    auto r = c.slurm(
        {"sbatch", "--parsable", "--job-name=itest-slow", "--nodes=3", "--chdir=" + work,
         "--output=" + work + "/train-%j.out",
         "--export=ALL,PYTHONDONTWRITEBYTECODE=1,SLOW_NODE=node-3,LLMWATCH_TIMING_DIR=" + timing +
             ",HELPER_DIR=" + source_dir() + "/share/llmwatch/python" +
             (summary ? ",LLMWATCH_TIMING_SUMMARY=1,GATHER_DIR=" + work + "/gather" : ""),
         work + "/train.sh"});
    EXPECT_TRUE(r.ok()) << r.err;
    return r.out.substr(0, r.out.find_first_of(";\n"));
  }
  std::string status() { return llmwatch(config, {"status", "--json"}).out; }
  std::string events() { return llmwatch(config, {"events"}).out; }
};

TEST(SlowNode, AlertNamesTheSlowNodeAndTouchesNothing) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c(3);
  ASSERT_TRUE(c.error.empty()) << c.error;
  SlowRun run(c, "alert");
  std::string id = run.submit();
  ASSERT_FALSE(id.empty());
  // The finding names the node's throttled GPU once a node-check in the job has looked at it.
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(run.config, {"run", "--once"});
        return run.status().find("slow node node-3") != std::string::npos &&
               run.status().find("GPU 0 HW Slowdown, SM clock 1095/1980 MHz") != std::string::npos;
      },
      90))
      << run.events() << run.status();
  std::string events = run.events();
  EXPECT_EQ(run.status().find("node-1 GPU"), std::string::npos) << run.status();
  EXPECT_EQ(events.find("slow node node-1"), std::string::npos) << events;
  EXPECT_EQ(events.find("slow node node-2"), std::string::npos) << events;
  EXPECT_NE(events.find("rank 2 compute"), std::string::npos) << "node-3 runs rank 2\n" << events;
  EXPECT_EQ(llmwatch_sql(c.dir / "state",
                         "SELECT COUNT(*) FROM actions WHERE kind IN ('cancel','restart','drain')"),
            "0\n");
  auto q = c.slurm({"squeue", "-h", "-j", id, "-o", "%T"});
  EXPECT_EQ(q.out, "RUNNING\n") << "the run is left alone";
  c.slurm({"scancel", id});
}

// The slow node's GPU runs a second process (a stray from an earlier job, say): its clocks and
// power read like the load (the real H200 captures: the trainer alone on node-1 and node-2, with
// a second process beside it on node-3, whose compute-apps answer names both). The finding
// names the shared GPU as the cause; before, it said the slowness was not in its GPUs.
TEST(SlowNode, AGpuAnotherProcessSharesIsTheCause) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c(3);
  ASSERT_TRUE(c.error.empty()) << c.error;
  SlowRun run(c, "alert");
  const std::string h200 = fixture("gpu/h200-580.159.04");
  setenv("FAKE_NVSMI_QUERY", (h200 + "/query-alone.csv").c_str(), 1);
  setenv("FAKE_NVSMI_SLOW_QUERY", (h200 + "/query-contended-run2.csv").c_str(), 1);
  setenv("FAKE_NVSMI_SLOW_APPS", (h200 + "/compute-apps-contended-run2.csv").c_str(), 1);
  const std::string one = c.dir / "one-process.csv";  // the trainer alone: one rank a GPU
  write_file(one, "4242, 00000000:00:06.0\n");
  setenv("FAKE_NVSMI_APPS", one.c_str(), 1);
  std::string id = run.submit();
  ASSERT_FALSE(id.empty());
  bool named = eventually(
      [&] {
        llmwatch(run.config, {"run", "--once"});
        return run.status().find("GPU 0, SM clock 1530/1980 MHz, 2 compute processes") !=
               std::string::npos;
      },
      90);
  unsetenv("FAKE_NVSMI_SLOW_APPS");
  ASSERT_TRUE(named) << run.events() << run.status();
  std::string events = run.events();
  EXPECT_NE(events.find("slow node node-3"), std::string::npos) << events;
  std::string status = run.status();
  EXPECT_NE(status.find("2 compute processes on it, the job's other nodes' GPUs 1: another "
                        "process competes for it"),
            std::string::npos)
      << status;
  EXPECT_EQ(events.find("slow node node-1"), std::string::npos) << events;
  c.slurm({"scancel", id});
}

TEST(SlowNode, EvictRestartsWithoutTheNodeAndDrainsIt) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c(4);
  ASSERT_TRUE(c.error.empty()) << c.error;
  SlowRun run(c, "evict");
  std::string id = run.submit();
  ASSERT_FALSE(id.empty());
  std::string drained;
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(run.config, {"run", "--once"});
        drained = c.slurm({"sinfo", "-h", "-n", "node-3", "-o", "%T %E"}).out;
        return drained.find("drain") != std::string::npos;
      },
      120))
      << run.events() << run.status();
  EXPECT_NE(drained.find("llmwatch: slow node-3"), std::string::npos) << drained;
  EXPECT_NE(drained.find("GPU 0 HW Slowdown"), std::string::npos) << drained;
  std::string events = run.events();
  EXPECT_NE(events.find("evicted from itest-slow"), std::string::npos) << events;
  EXPECT_NE(events.find("excluding node-3"), std::string::npos) << events;
  auto jobs = c.slurm({"squeue", "-h", "-n", "itest-slow", "-o", "%i"}).out;
  EXPECT_EQ(jobs.find(id + "\n"), std::string::npos) << "the slow run was cancelled: " << jobs;
  c.slurm({"scancel", "-n", "itest-slow"});
  c.slurm({"scontrol", "update", "nodename=node-3", "state=resume"});
}

// A large job's way: rank 0's summary, one file for the job. The same node is named on the same
// evidence, and no rank file is written or needed.
TEST(SlowNode, ARankZeroSummaryNamesTheSlowNodeAsTheRankFilesDo) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c(3);
  ASSERT_TRUE(c.error.empty()) << c.error;
  SlowRun run(c, "alert", true);
  std::string id = run.submit();
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(run.config, {"run", "--once"});
        return run.status().find("slow node node-3") != std::string::npos;
      },
      90))
      << run.events() << run.status();
  std::string events = run.events();
  EXPECT_EQ(events.find("slow node node-1"), std::string::npos) << events;
  EXPECT_EQ(events.find("slow node node-2"), std::string::npos) << events;
  EXPECT_NE(events.find("rank 2 compute"), std::string::npos) << "node-3 runs rank 2\n" << events;
  EXPECT_TRUE(std::filesystem::exists(run.timing + "/summary.json"));
  for (const auto& e : std::filesystem::directory_iterator(run.timing))
    EXPECT_NE(e.path().extension(), ".jsonl") << "no rank writes a file of its own: " << e.path();
  EXPECT_EQ(llmwatch_sql(c.dir / "state",
                         "SELECT COUNT(*) FROM actions WHERE kind IN ('cancel','restart','drain')"),
            "0\n");
  c.slurm({"scancel", id});
}

// Megatron-LM without the helper (timing_from_log): 6 srun ranks, two a node, each timing its
// forward and backward compute (0.075 s each on node-3, 0.05 s elsewhere); after every
// iteration they gather through the work directory and the last rank prints the iteration line
// and every rank's timers as Megatron's --timing-log-option all does. Megatron's log names no
// hosts: llmwatch places the ranks in blocks over the task's nodes, which is where srun's
// default distribution puts them (node-3 runs ranks 4-5), run by run --once, a process a cycle.
constexpr const char* kMegatronRank = R"(import json, os, time
world, rank = int(os.environ["SLURM_NTASKS"]), int(os.environ["SLURM_PROCID"])
slow = os.environ.get("SLURMD_NODENAME") == os.environ.get("SLOW_NODE")
base = os.path.join(os.environ["GATHER_DIR"], os.environ["SLURM_JOB_ID"])
for it in range(1, 100000):
    times = []
    for phase in (0, 1):
        t0 = time.time()
        time.sleep(0.075 if slow else 0.05)
        times.append((time.time() - t0) * 1000)
    d = os.path.join(base, str(it))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "%d.tmp" % rank), "w") as f:
        json.dump(times, f)
    os.replace(os.path.join(d, "%d.tmp" % rank), os.path.join(d, "%d.json" % rank))
    while len([n for n in os.listdir(d) if n.endswith(".json")]) < world:
        time.sleep(0.005)
    if rank == world - 1:
        got = [json.load(open(os.path.join(d, "%d.json" % r))) for r in range(world)]
        out = [" iteration %8d/  500000 | elapsed time per iteration (ms): 130.0 |" % it,
               "times across ranks (ms):"]
        for i, name in enumerate(("forward-compute", "backward-compute")):
            out.append("  %s:" % name)
            out += ["     rank %2d: %.2f" % (r, got[r][i]) for r in range(world)]
        print("\n".join(out), flush=True)
)";

// Each rank prints its own timing line after the step's collective (the gather stands in for
// it, so the ranks keep step as synchronous training does); srun --label prefixes each line
// with the rank's task number, as many Slurm launch scripts do.
constexpr const char* kLabelledRank = R"(import os, time
world, rank = int(os.environ["SLURM_NTASKS"]), int(os.environ["SLURM_PROCID"])
slow = os.environ.get("SLURMD_NODENAME") == os.environ.get("SLOW_NODE")
base = os.path.join(os.environ["GATHER_DIR"], os.environ["SLURM_JOB_ID"])
for it in range(1, 100000):
    t0 = time.time()
    time.sleep(0.075 if slow else 0.05)
    ms = (time.time() - t0) * 1000
    d = os.path.join(base, str(it))
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "%d" % rank), "w").close()
    while len(os.listdir(d)) < world:
        time.sleep(0.005)
    print(" iteration %8d/  500000 | elapsed time per iteration (ms): 130.0 | compute %.2f ms |"
          " lm loss: 2.31" % (it, ms), flush=True)
)";

// Six ranks, two a node on three nodes (srun --overcommit), print their times into the job's
// log by `script`; node-3's compute 1.5x longer. llmwatch, by `run --once` with timing_from_log,
// names node-3 with ranks 4-5 (where srun put them), no other node, and acts on nothing.
void log_timing_names_the_slow_node(const char* script, const std::string& srun_flags) {
  LocalCluster c(3);
  ASSERT_TRUE(c.error.empty()) << c.error;
  const std::string work = c.dir / "work", config = c.dir / "llmwatch.toml";
  std::filesystem::create_directories(work);
  write_file(work + "/rank.py", script);
  write_file(work + "/train.sh", "#!/bin/sh\nexec srun --overcommit --ntasks-per-node=2 " +
                                     srun_flags + "python3 " + work + "/rank.py\n");
  std::filesystem::permissions(work + "/train.sh", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                         "\"\n[slurm]\ntimeout = \"10s\"\n[[job]]\n" + job_owner() +
                         "name = \"itest-log-timing\"\nstartup_grace = \"1m\"\n"
                         "max_steps = 10000000\ntiming_from_log = true\n");
  auto r = c.slurm(
      {"sbatch", "--parsable", "--job-name=itest-log-timing", "--nodes=3", "--overcommit",
       "--chdir=" + work, "--output=" + work + "/train-%j.out",
       "--export=ALL,PYTHONDONTWRITEBYTECODE=1,SLOW_NODE=node-3,GATHER_DIR=" + work + "/gather",
       work + "/train.sh"});
  ASSERT_TRUE(r.ok()) << r.err;
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  auto status = [&] { return llmwatch(config, {"status", "--json"}).out; };
  // Until the run's first step is known, so is not a restart's cost, and the finding says
  // "keep: the cost of a restart is not known yet" (a loaded CI machine's first cycles did):
  // the eviction's sum, and its doubt about a node placed by layout, come once it is.
  std::string seen;
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(config, {"run", "--once"});
        seen = status();
        return seen.find("slow node node-3") != std::string::npos &&
               seen.find("its ranks were placed by layout") != std::string::npos;
      },
      90))
      << llmwatch(config, {"events"}).out << seen;
  std::string events = llmwatch(config, {"events"}).out;
  EXPECT_NE(events.find("ranks 4-5 compute"), std::string::npos)
      << "srun placed ranks 4-5 on node-3\n"
      << events;
  EXPECT_EQ(events.find("slow node node-1"), std::string::npos) << events;
  EXPECT_EQ(events.find("slow node node-2"), std::string::npos) << events;
  EXPECT_EQ(llmwatch_sql(c.dir / "state",
                         "SELECT COUNT(*) FROM actions WHERE kind IN ('cancel','restart','drain')"),
            "0\n");
  c.slurm({"scancel", id});
}

TEST(SlowNode, MegatronsOwnTimersNameTheSlowNodeWithoutTheHelper) {
  LLMWATCH_REQUIRE_CLUSTER();
  log_timing_names_the_slow_node(kMegatronRank, "");
}

TEST(SlowNode, EachRanksOwnLabelledLineNamesTheSlowNode) {
  LLMWATCH_REQUIRE_CLUSTER();
  log_timing_names_the_slow_node(kLabelledRank, "--label ");
}

}  // namespace
}  // namespace llmwatch::testing

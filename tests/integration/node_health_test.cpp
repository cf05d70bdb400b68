// GPU node health end to end on a real local cluster: node-check per node (kernel-log file
// source per node, stand-in nvidia-smi printing the real H100 capture) writes its verdicts to
// a results directory; the supervisor drains a node with an Xid 79, restarts the watched job
// off it, undrains it once repaired, leaves an admin's drain alone, and honours its limits.
#include <sys/stat.h>

#include "local_cluster.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_text.h"
#include "store/store.h"
#include "util/identity.h"
#include "util/strings.h"

namespace llmwatch::testing {
namespace {

const char* kXid79 =
    "[171167.620236] NVRM: Xid (PCI:0000:00:09): 79, pid='<unknown>', name=<unknown>, GPU has "
    "fallen off the bus.\n";

struct GpuCluster {
  LocalCluster& c;
  std::string work, config, kmsg, results;

  GpuCluster(LocalCluster& cluster, const std::string& extra_gpu = "",
             const std::string& limits = "")
      : c(cluster),
        work(c.dir / "work"),
        config(c.dir / "llmwatch.toml"),
        kmsg(c.dir / "kmsg"),
        results(c.dir / "results") {
    std::filesystem::create_directories(work);
    std::filesystem::create_directories(kmsg);
    for (int i = 1; i <= 4; ++i)
      write_file(kmsg + "/node-" + std::to_string(i) + ".log", "[1.0] Linux version 6.1\n");
    setenv("FAKE_NVSMI_MODE", "ok", 1);
    setenv("FAKE_NVSMI_QUERY", fixture("gpu/nvidia-smi-query-h100.csv").c_str(), 1);
    setenv("FAKE_NVSMI_NVLINK", fixture("gpu/nvlink-status-h100.txt").c_str(), 1);
    setenv("FAKE_NVSMI_APPS", "/dev/null", 1);
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\ninterval = \"1s\"\n[slurm]\ntimeout = \"5s\"\n" + limits +
                           "[gpu]\nenabled = true\nkernel_log = \"file\"\nkernel_log_path = \"" +
                           kmsg + "/{node}.log\"\nnvidia_smi = \"" + source_dir() +
                           "/tests/helpers/fake-nvidia-smi\"\nnvidia_smi_timeout = \"2s\"\n"
                           "results_dir = \"" +
                           results + "\"\nnode_state_dir = \"" + (c.dir / "nodestate") +
                           "\"\nmanage_nodes = \"node-[1-4]\"\nmax_drained_fraction = \"50%\"\n" +
                           extra_gpu + "[[job]]\n" + job_owner() +
                           "name = \"itest-gpu\"\nstale_floor = \"1m\"\n"
                           "startup_grace = \"1m\"\n");
  }

  int node_check(const std::string& node, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"node-check", "--node", node};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = llmwatch(config, args, 30);
    return r.exit_code;
  }
  void check_all() {
    for (int i = 1; i <= 4; ++i) node_check("node-" + std::to_string(i));
  }
  void cycle() {
    auto r = llmwatch(config, {"run", "--once"});
    EXPECT_TRUE(r.ok()) << r.describe("run --once") << r.err;
  }
  std::map<std::string, std::string> node(const std::string& name) {
    auto r = c.slurm({"scontrol", "show", "node", name});
    auto records = parse_scontrol_show(r.out);
    return records.empty() ? std::map<std::string, std::string>{} : records.front();
  }
  bool drained(const std::string& name) {
    return node(name)["State"].find("DRAIN") != std::string::npos;
  }
  std::string events() { return llmwatch(config, {"events", "--json"}).out; }
  std::string submit(int nodes) {
    auto r =
        c.slurm({"sbatch", "--parsable", "--job-name=itest-gpu", "--nodes=" + std::to_string(nodes),
                 "--chdir=" + work, "--output=" + work + "/train-%j.out",
                 "--export=ALL,FAKE_TRAINER_DIR=" + work + ",FAKE_STEP_TIME=0.5",
                 source_dir() + "/examples/fake-trainer.sh"});
    EXPECT_TRUE(r.ok()) << r.describe("sbatch") << r.err;
    return std::string(trim(r.out.substr(0, r.out.find_first_of(";\n"))));
  }
  // The restarted run: a RUNNING job other than `before`, within 60 s (empty if none came).
  std::pair<std::string, std::string> next_run(const std::string& before) {
    std::pair<std::string, std::string> run;
    eventually(
        [&] {
          run = running();
          return !run.first.empty() && run.first != before;
        },
        60);
    return run.first == before ? std::pair<std::string, std::string>{} : run;
  }
  // The RUNNING job's id and node list, or empty.
  std::pair<std::string, std::string> running() {
    for (const auto& j : c.jobs())
      if (j.value("job_state", "") == "RUNNING" && j.value("name", "") == "itest-gpu")
        return {std::to_string(j.value("job_id", 0)), j.value("nodes", "")};
    return {};
  }
};

TEST(NodeHealth, Xid79DrainsRestartsElsewhereUndrainsAfterRepairLeavesAdminDrain) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c);
  ASSERT_TRUE(c.slurm({"scontrol", "update", "nodename=node-4", "state=drain",
                       "reason=bad DIMM, ticket 42"})
                  .ok());
  g.submit(2);
  std::pair<std::string, std::string> job;
  ASSERT_TRUE(eventually([&] { return !(job = g.running()).first.empty(); }, 60));
  ASSERT_EQ(job.second, "node-[1-2]");

  // Healthy everywhere: no finding, nothing drained.
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(g.node_check("node-" + std::to_string(i)), 0);
  g.cycle();
  EXPECT_FALSE(g.drained("node-2"));

  // Xid 79 on node-2: node-check says CRITICAL (2); one cycle drains node-2 with an
  // llmwatch: reason, cancels the task and resubmits the run with node-2 excluded.
  write_file(g.kmsg + "/node-2.log", kXid79, true);
  EXPECT_EQ(g.node_check("node-2"), 2);
  g.cycle();
  auto n2 = g.node("node-2");
  EXPECT_NE(n2["State"].find("DRAIN"), std::string::npos) << n2["State"];
  EXPECT_EQ(n2["Reason"].rfind("llmwatch: Xid 79 GPU 0: GPU has fallen off the bus", 0), 0u)
      << n2["Reason"];
  std::string events = g.events();
  EXPECT_NE(events.find("cancel done: scancel " + job.first), std::string::npos) << events;
  EXPECT_NE(events.find("excluding node-[2,4]"), std::string::npos) << events;
  auto again = g.next_run(job.first);
  ASSERT_FALSE(again.first.empty()) << g.events();
  EXPECT_EQ(again.second.find("node-2"), std::string::npos) << again.second;
  EXPECT_EQ(again.second, "node-[1,3]");

  // Not yet repaired: another cycle changes nothing (idempotent: one drain, one cancel).
  g.cycle();
  events = g.events();
  size_t drains = 0;
  for (size_t p = 0; (p = events.find("drain done", p)) != std::string::npos; ++p) ++drains;
  EXPECT_EQ(drains, 1u) << events;

  // Repaired: the kernel log is clean (a reboot empties the ring) and the check passes.
  write_file(g.kmsg + "/node-2.log", "[1.0] Linux version 6.1\n");
  EXPECT_EQ(g.node_check("node-2"), 0);
  EXPECT_EQ(g.node_check("node-4"), 0);
  g.cycle();
  EXPECT_FALSE(g.drained("node-2")) << g.node("node-2")["State"];
  EXPECT_NE(g.events().find("undrain done: returned node-2 to service"), std::string::npos);
  // The admin's drain stays, with the admin's reason, although node-4 checks clean.
  auto n4 = g.node("node-4");
  EXPECT_NE(n4["State"].find("DRAIN"), std::string::npos);
  EXPECT_EQ(n4["Reason"].rfind("bad DIMM, ticket 42", 0), 0u) << n4["Reason"];

  // The node's history tells the story.
  auto history = llmwatch(g.config, {"nodes", "node-2"}).out;
  EXPECT_NE(history.find("CRITICAL Xid 79"), std::string::npos) << history;
  EXPECT_NE(history.find("OK all checks passed"), std::string::npos) << history;
}

// #30: a restart never lands on a bad node for long. node-2 fails (Xid 79) and the run is
// restarted without it; Slurm gives the new run node-3, whose GPU broke while it sat idle (no
// check had looked at it). The new allocation's node-check, inside the new run, finds it: node-3
// is drained with the reason and the run restarted again, without node-2 and node-3. With
// collect = "srun" every cycle checks every watched job; with "results" (the default) the
// verdicts come from files, and the new task is checked once on arrival (check_new_allocations).
void a_new_allocations_failing_node_is_drained(const std::string& collect) {
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c, "collect = \"" + collect + "\"\n");
  write_file(g.kmsg + "/node-3.log", kXid79, true);  // idle and unchecked: nobody knows yet
  g.submit(2);
  std::pair<std::string, std::string> first;
  ASSERT_TRUE(eventually([&] { return !(first = g.running()).first.empty(); }, 60));
  ASSERT_EQ(first.second, "node-[1-2]");
  g.cycle();
  EXPECT_FALSE(g.drained("node-3")) << "not in a watched job: not checked, not drained";

  write_file(g.kmsg + "/node-2.log", kXid79, true);
  if (collect == "results") {
    EXPECT_EQ(g.node_check("node-2"), 2);  // its health check's file
  }
  g.cycle();
  EXPECT_TRUE(g.drained("node-2")) << g.events();
  auto second = g.next_run(first.first);
  ASSERT_FALSE(second.first.empty()) << g.events();
  auto placed = hosts_in(second.second);
  ASSERT_NE(std::find(placed.begin(), placed.end(), "node-3"), placed.end())
      << second.second << ": Slurm did not place the restarted run on node-3";

  // The first cycle that sees the new run checks its allocation.
  g.cycle();
  auto n3 = g.node("node-3");
  EXPECT_NE(n3["State"].find("DRAIN"), std::string::npos) << n3["State"] << g.events();
  EXPECT_EQ(n3["Reason"].rfind("llmwatch: Xid 79", 0), 0u) << n3["Reason"];
  std::string events = g.events();
  EXPECT_NE(events.find("cancel done: scancel " + second.first), std::string::npos) << events;
  EXPECT_NE(events.find("excluding node-[2-3]"), std::string::npos) << events;
  auto third = g.next_run(second.first);
  ASSERT_FALSE(third.first.empty()) << g.events();
  EXPECT_EQ(third.second, "node-[1,4]");
  EXPECT_FALSE(g.drained("node-1"));
  EXPECT_FALSE(g.drained("node-4"));
  if (collect != "results") return;
  // The history says which run was counted as resumed, and why the other was not. The third
  // run's check may take more than one look: a check the remote budget deferred is asked again
  // next cycle, and a task not yet running is not asked (it failed once, one cycle and done,
  // under three clusters' tests at once). Cycles until the history says, with a deadline.
  const std::string third_resumed = "restarted run " + third.first +
                                    " on node-[1,4] counted as resumed: its "
                                    "allocation's node-check passed on 2 of 2 nodes";
  EXPECT_TRUE(eventually(
      [&] {
        g.cycle();
        events = g.events();
        return events.find(third_resumed) != std::string::npos;
      },
      60))
      << events;
  EXPECT_NE(events.find("restarted run " + second.first + " on " + second.second +
                        " not counted as resumed: its allocation's node-check failed (node-3 "),
            std::string::npos)
      << events;
}

// A lemon passes its checks between its faults. Drained as one, it stays drained through the
// checks it passes; once its incidents no longer make it one (a step loop's, withdrawn), the
// next passing check returns it. Before, the first check it passed after the drain returned it
// to service, for good: the lemon finding still fired, so nothing drained it again.
TEST(NodeHealth, ALemonStaysDrainedThroughPassingChecksUntilItsIncidentsAreWithdrawn) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c, "lemon_failures = 3\n");
  g.check_all();
  const double now = unix_now();
  {
    Store store(c.dir / "state");
    for (int i = 1; i <= 3; ++i)
      store.add_incident(now - 600 + i, "node-3", std::to_string(40 + i) + "@1",
                         "itest-gpu crashed, attributed to node-3");
  }
  g.cycle();
  ASSERT_TRUE(g.drained("node-3")) << g.events();
  EXPECT_EQ(g.node("node-3")["Reason"].rfind("llmwatch: ", 0), 0u) << g.node("node-3")["Reason"];
  auto count = [&](const std::string& what) { return testing::count_of(g.events(), what); };
  for (int i = 0; i < 2; ++i) {  // it passes a check after the drain, twice
    EXPECT_EQ(g.node_check("node-3"), 0);
    g.cycle();
    EXPECT_TRUE(g.drained("node-3"));
  }
  EXPECT_EQ(count("undrain done"), 0u) << g.events();
  EXPECT_EQ(count("drain done"), 1u) << g.events();  // "undrain done" would count here too

  {
    Store store(c.dir / "state");
    store.withdraw_incidents(unix_now(), {"41@1"}, "the step, not the node");
  }
  EXPECT_EQ(g.node_check("node-3"), 0);
  g.cycle();
  EXPECT_FALSE(g.drained("node-3")) << g.events();
  EXPECT_EQ(count("undrain done: returned node-3 to service"), 1u) << g.events();
}

TEST(NodeHealth, ANewAllocationsFailingNodeIsDrainedAndTheRunRestartedWithoutIt) {
  LLMWATCH_REQUIRE_CLUSTER();
  a_new_allocations_failing_node_is_drained("srun");
}

TEST(NodeHealth, ARestartedRunsAllocationIsCheckedOnArrivalWithResultsFiles) {
  LLMWATCH_REQUIRE_CLUSTER();
  a_new_allocations_failing_node_is_drained("results");
}

TEST(NodeHealth, DrainLimitsHoldAndAHangingNvidiaSmiDrainsNothing) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c, "", "[limits]\nmax_drains_per_hour = 1\n");
  // nvidia-smi hangs on node-1: UNKNOWN (exit 3) within its timeout, never a drain.
  setenv("FAKE_NVSMI_MODE", "hang", 1);
  EXPECT_EQ(g.node_check("node-1"), 3);
  setenv("FAKE_NVSMI_MODE", "ok", 1);
  g.cycle();
  EXPECT_FALSE(g.drained("node-1"));

  // Two nodes with Xid 79: the hourly budget (1) drains one; the other is only reported.
  write_file(g.kmsg + "/node-1.log", kXid79, true);
  write_file(g.kmsg + "/node-3.log", kXid79, true);
  g.check_all();
  g.cycle();
  int drained = g.drained("node-1") + g.drained("node-3");
  EXPECT_EQ(drained, 1) << g.events();
  std::string events = g.events();
  EXPECT_NE(events.find("max_drains_per_hour (1) reached"), std::string::npos) << events;
  // The defect: --drain-self had no cluster-wide limit. It now shares the hourly budget
  // (spent by the supervisor's drain above) and is journaled like any drain.
  write_file(g.kmsg + "/node-2.log", kXid79, true);
  auto self = llmwatch(g.config, {"node-check", "--node", "node-2", "--drain-self"}, 30);
  EXPECT_EQ(self.exit_code, 2);
  EXPECT_FALSE(g.drained("node-2"));
  EXPECT_NE(self.out.find("drain-self: not drained: not done: max_drains_per_hour (1) reached"),
            std::string::npos)
      << self.out;
}

TEST(NodeHealth, DrainedFractionAndDrainSelf) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c, "", "");
  ASSERT_TRUE(c.slurm({"scontrol", "update", "nodename=node-4", "state=drain",
                       "reason=admin: rack maintenance"})
                  .ok());
  // --drain-self drains its own node with an llmwatch: reason...
  write_file(g.kmsg + "/node-1.log", kXid79, true);
  EXPECT_EQ(g.node_check("node-1", {"--drain-self"}), 2);
  EXPECT_TRUE(g.drained("node-1"));
  EXPECT_EQ(g.node("node-1")["Reason"].rfind("llmwatch: Xid 79", 0), 0u);
  // ...but never replaces someone else's reason.
  write_file(g.kmsg + "/node-4.log", kXid79, true);
  EXPECT_EQ(g.node_check("node-4", {"--drain-self"}), 2);
  EXPECT_EQ(g.node("node-4")["Reason"].rfind("admin: rack maintenance", 0), 0u);

  // 2 of 4 nodes are out (50%): a third CRITICAL node is reported, not drained.
  write_file(g.kmsg + "/node-3.log", kXid79, true);
  g.check_all();
  g.cycle();
  EXPECT_FALSE(g.drained("node-3"));
  auto evidence =
      llmwatch_sql(c.dir / "state", "SELECT evidence FROM findings WHERE key='node:node-3/gpu'");
  EXPECT_NE(evidence.find("not drained: max_drained_fraction (50%) of partition debug"),
            std::string::npos)
      << evidence << g.events();
  // The defect: --drain-self ignored max_drained_fraction (every node of a bad rack could
  // drain itself). Now it counts the nodes Slurm shows out, as the supervisor does.
  write_file(g.kmsg + "/node-2.log", kXid79, true);
  auto self = llmwatch(g.config, {"node-check", "--node", "node-2", "--drain-self"}, 30);
  EXPECT_EQ(self.exit_code, 2);
  EXPECT_FALSE(g.drained("node-2"));
  EXPECT_NE(self.out.find("drain-self: not drained: max_drained_fraction (50%)"), std::string::npos)
      << self.out;
}

// collect = "srun": node-check runs as a step inside the watched job's own allocation
// (srun --overlap), one task per node; each task finds its node name in SLURMD_NODENAME.
TEST(NodeHealth, SrunCollectionIntoTheWatchedJobsAllocation) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c, "collect = \"srun\"\n");
  g.submit(2);
  std::pair<std::string, std::string> job;
  ASSERT_TRUE(eventually([&] { return !(job = g.running()).first.empty(); }, 60));
  write_file(g.kmsg + "/node-2.log", kXid79, true);
  g.cycle();
  EXPECT_TRUE(g.drained("node-2")) << g.events();
  EXPECT_FALSE(g.drained("node-1"));
  auto health = llmwatch(g.config, {"nodes", "--json"}).out;
  EXPECT_NE(health.find("\"node-1\": \"OK all checks passed\""), std::string::npos) << health;
}

// The same in another user's job, as on every real cluster: root may not start a step there
// ("Access/permission denied"), so the step runs as the job's owner in the job's group. The
// defect: every check of a user's job failed, so a slow or failing node inside a running job
// was only ever judged by its last check from outside.
TEST(NodeHealth, SrunCollectionIntoAnotherUsersJobRunsAsItsOwner) {
  LLMWATCH_REQUIRE_CLUSTER();
  const std::string user = "llmwatch-itest";
  if (!running_as_root() || !lookup_user(user)) GTEST_SKIP() << "needs root and " << user;
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c, "collect = \"srun\"\n");
  std::string text = read_file(g.config);
  text.replace(text.find(job_owner()), job_owner().size(), "user = \"" + user + "\"\n");
  write_file(g.config, text);
  ::chmod(c.dir.path.c_str(), 0711);  // the owner's job and step reach their files
  ::chmod(g.work.c_str(), 0777);
  auto sub =
      c.slurm({"sbatch", "--parsable", "--uid=" + user, "--gid=" + user, "--job-name=itest-gpu",
               "--nodes=2", "--chdir=" + g.work, "--output=" + g.work + "/train-%j.out",
               "--export=ALL,FAKE_TRAINER_DIR=" + g.work + ",FAKE_STEP_TIME=0.5",
               source_dir() + "/examples/fake-trainer.sh"});
  ASSERT_TRUE(sub.ok()) << sub.err;
  std::pair<std::string, std::string> job;
  ASSERT_TRUE(eventually([&] { return !(job = g.running()).first.empty(); }, 60))
      << c.slurm({"squeue", "-t", "all", "-o", "%i %T %r %u %g"}).out;
  write_file(g.kmsg + "/node-2.log", kXid79, true);
  g.cycle();
  auto health = llmwatch(g.config, {"nodes", "--json"}).out;
  EXPECT_NE(health.find("\"node-1\": \"OK all checks passed\""), std::string::npos)
      << health << g.events();
  EXPECT_TRUE(g.drained("node-2")) << g.events();
  EXPECT_EQ(g.events().find("permission denied"), std::string::npos) << g.events();
}

// The site's own checks on the nodes (#17): an NHC-style health script and a gcm-style GPU
// check, both Nagios plugins, run by node-check inside the watched job's allocation (srun),
// each told its node. The CRITICAL on node-2 drains node-2 with the script's words; the
// WARNING on node-1 is shown, never acted on.
TEST(NodeHealth, SiteChecksRunOnTheNodesAndACriticalDrainsThatNode) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c, "collect = \"srun\"\n");
  std::string nhc = c.dir / "nhc", gcm = c.dir / "check_gpu_clocks";
  write_file(nhc,
             "#!/bin/sh\n# NHC in its Nagios mode: one line, the exit status is the verdict\n"
             "if [ \"$LLMWATCH_NODE\" = node-2 ]; then\n"
             "  echo 'ERROR: nhc: Health check failed: check_fs_mount: /scratch not mounted'\n"
             "  exit 2\nfi\necho 'OK: nhc: all checks passed'\n");
  write_file(gcm,
             "#!/bin/sh\nif [ \"$LLMWATCH_NODE\" = node-1 ]; then\n"
             "  echo 'WARNING - check_nvidia_smi clocks: GPU 2 throttled (HW slowdown) | gpu2=1'\n"
             "  exit 1\nfi\necho 'OK - clocks nominal'\n");
  ::chmod(nhc.c_str(), 0755);
  ::chmod(gcm.c_str(), 0755);
  write_file(g.config,
             "[[check]]\nname = \"nhc\"\ncommand = [\"" + nhc +
                 "\"]\nwhere = \"nodes\"\nevery = \"1h\"\n"
                 "[[check]]\nname = \"gpu-clocks\"\ncommand = [\"" +
                 gcm + "\"]\nwhere = \"nodes\"\n",
             true);
  auto valid = llmwatch(g.config, {"config", "check"});
  ASSERT_TRUE(valid.ok()) << valid.out << valid.err;
  g.submit(2);
  std::pair<std::string, std::string> job;
  ASSERT_TRUE(eventually([&] { return !(job = g.running()).first.empty(); }, 60));
  ASSERT_EQ(job.second, "node-[1-2]");
  g.cycle();
  EXPECT_TRUE(g.drained("node-2")) << g.events();
  EXPECT_NE(g.node("node-2")["Reason"].find("nhc: ERROR: nhc: Health check failed"),
            std::string::npos)
      << g.node("node-2")["Reason"];
  EXPECT_FALSE(g.drained("node-1"));
  auto health = llmwatch(g.config, {"nodes", "--json"}).out;
  EXPECT_NE(health.find("\"node-1\": \"WARN gpu-clocks: WARNING - check_nvidia_smi clocks"),
            std::string::npos)
      << health;
}

// A reset-class fault (Xid 119, a GSP RPC timeout: the catalogue says reset) is healed through
// Slurm (#17):
// `scontrol reboot ASAP nextstate=RESUME`, here with a RebootProgram that restarts the node's
// slurmd with a new boot time. Slurm returns the node to service by itself; llmwatch then
// takes the verdict from before the boot as no verdict (waits, acts on nothing) until a
// node-check after the boot passes.
TEST(NodeHealth, AResetClassFaultRebootsTheNodeWhichMustPassACheckAfterTheBoot) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c(4, {{"LLMWATCH_CLUSTER_REBOOT", LLMWATCH_FAKE_BOOT_TIME_LIB}});
  ASSERT_TRUE(c.error.empty()) << c.error;
  GpuCluster g(c);
  std::string boot_before = g.node("node-2")["BootTime"];
  write_file(g.kmsg + "/node-2.log",
             "[171167.620236] NVRM: Xid (PCI:0000:00:09): 119, pid=3372, name=python3, Timeout "
             "after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 "
             "(GSP_RM_CONTROL) (0x20801702 0x4).\n",
             true);
  g.check_all();
  g.cycle();
  EXPECT_NE(g.events().find("reboot of node-2 requested"), std::string::npos) << g.events();
  // node-2 is idle: Slurm reboots it at once and resumes it.
  ASSERT_TRUE(eventually(
      [&] {
        auto n = g.node("node-2");
        return n["BootTime"] != boot_before && n["State"] == "IDLE";
      },
      90))
      << g.node("node-2")["State"] << " " << read_file(c.dir / "cluster/log/reboots.log");
  g.cycle();  // the last verdict is from before the boot: no verdict, no action
  EXPECT_FALSE(g.drained("node-2")) << g.events();
  auto status = llmwatch(g.config, {"status", "--json"}).out;
  EXPECT_NE(status.find("waiting for a node-check after the boot"), std::string::npos) << status;
  // A fresh boot's kernel log has no Xid: the check after the boot passes.
  write_file(g.kmsg + "/node-2.log", "[1.0] Linux version 6.1\n");
  EXPECT_EQ(g.node_check("node-2"), 0);
  g.cycle();
  EXPECT_NE(g.events().find("node-2 is back in service after its reboot: node-check OK"),
            std::string::npos)
      << g.events();
  EXPECT_FALSE(g.drained("node-2"));
  EXPECT_EQ(llmwatch_sql(c.dir / "state",
                         "SELECT COUNT(*) FROM kv WHERE key IN ('drained:node-2', "
                         "'rebooting:node-2') AND value != ''"),
            "0\n");
}

}  // namespace
}  // namespace llmwatch::testing

// `llmwatch daemon`: cycles on its timer, reloads its config on SIGHUP (refusing a broken
// one), stops cleanly on SIGTERM and gives its lease back; a second instance stands by.
#include <sys/resource.h>

#include "local_cluster.h"
#include "util/units.h"

namespace llmwatch::testing {
namespace {

int cycles(const std::string& state_dir) {
  auto r = llmwatch_sql(state_dir, "SELECT COUNT(*) FROM cycles");
  return std::atoi(r.c_str());
}

TEST(Daemon, CyclesReloadsOnSighupAndStopsCleanlyOnSigterm) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config = c.dir / "llmwatch.toml";
  std::string state = c.dir / "state";
  std::string metrics = c.dir / "llmwatch.prom";
  std::string base = "[llmwatch]\nstate_dir = \"" + state +
                     "\"\ninterval = \"1s\"\nmetrics_file = \"" + metrics + "\"\n";
  write_file(config, base);
  BackgroundProcess d({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  ASSERT_TRUE(eventually([&] { return cycles(state) >= 2; }, 30)) << read_file(d.log);
  ASSERT_TRUE(std::filesystem::exists(state + "/lease"));

  // A second instance finds the lease held: it says by whom and exits 0 without acting.
  int before = cycles(state);
  auto second = llmwatch(config, {"run", "--once"});
  EXPECT_TRUE(second.ok());
  EXPECT_NE(second.err.find("holds the lease"), std::string::npos) << second.err;

  // The metrics file is valid Prometheus text format.
  if (access("/usr/bin/promtool", X_OK) == 0) {
    ProcessSpec check;
    check.argv = {"/usr/bin/promtool", "check", "metrics"};
    check.stdin_data = read_file(metrics);
    auto r = run_process(check);
    EXPECT_TRUE(r.ok()) << r.out << r.err << check.stdin_data;
  }

  // A broken config on SIGHUP is refused and the daemon keeps its old one.
  write_file(config, base + "bogus_key = 1\n");
  kill(d.pid, SIGHUP);
  ASSERT_TRUE(
      eventually([&] { return read_file(d.log).find("reload refused") != std::string::npos; }, 10))
      << read_file(d.log);
  write_file(config, base + "dry_run = true\n");
  kill(d.pid, SIGHUP);
  ASSERT_TRUE(
      eventually([&] { return read_file(d.log).find("reloaded") != std::string::npos; }, 10))
      << read_file(d.log);
  ASSERT_TRUE(eventually([&] { return cycles(state) > before + 1; }, 10));

  kill(d.pid, SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << read_file(d.log);
  EXPECT_FALSE(std::filesystem::exists(state + "/lease")) << "the lease was not given back";
}

// Hangs are found at their allowance, not at the next tick (#30), for every job: each wake
// schedules the next. Two runs step at 0 s, then at 8 s and 10 s, then stop; with a 12 s
// allowance and a 2 min tick, the first wake (12 s) finds neither hung and both are due again
// at 20 and 22 s. One wake per tick left both to the next tick, 2 min after the first.
TEST(Daemon, EveryJobsHangIsFoundAtItsOwnDeadlineNotAtTheNextTick) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string state = c.dir / "state";
  std::string config = c.dir / "llmwatch.toml";
  std::string body = "[llmwatch]\nstate_dir = \"" + state + "\"\ninterval = \"2m\"\n";
  for (const char* name : {"wake-a", "wake-b"})
    body += "[[job]]\nname = \"" + std::string(name) + "\"\n" + job_owner() +
            "stale_after = \"12s\"\nstartup_grace = \"2m\"\nconfirm_hang = \"0s\"\n"
            "on_hang = [\"alert\"]\n";
  write_file(config, body);
  for (auto [name, second] : {std::pair{"wake-a", 8}, std::pair{"wake-b", 10}}) {
    std::string script = "echo 'global_step: 1'; sleep " + std::to_string(second) +
                         "; echo 'global_step: 2'; sleep 600";
    ASSERT_TRUE(c.slurm({"sbatch", "--job-name=" + std::string(name), "--nodes=1",
                         "--output=" + (c.dir / name) + ".out", "--wrap", script})
                    .ok());
  }
  ASSERT_TRUE(eventually(
      [&] {
        return read_file(c.dir / "wake-a.out").find("global_step: 1") != std::string::npos &&
               read_file(c.dir / "wake-b.out").find("global_step: 1") != std::string::npos;
      },
      60));
  const double started = unix_now();
  BackgroundProcess d({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  auto found_at = [&](const std::string& name) {
    auto r = llmwatch_sql(state, "SELECT first_seen FROM findings WHERE key='job:" + name +
                                     "/hung' AND state='firing'");
    return r.empty() ? 0.0 : std::atof(r.c_str());
  };
  ASSERT_TRUE(eventually([&] { return found_at("wake-a") > 0 && found_at("wake-b") > 0; }, 150))
      << read_file(d.log);
  // Both within the first tick's interval, at their deadlines (about 22 s after the first step).
  EXPECT_LT(found_at("wake-a") - started, 60) << read_file(d.log);
  EXPECT_LT(found_at("wake-b") - started, 60) << read_file(d.log);
  std::cout << "hung found " << found_at("wake-a") - started << " s and "
            << found_at("wake-b") - started << " s after the daemon started\n";
  kill(d.pid, SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << read_file(d.log);
}

// A state directory that cannot be written (full; here every write past 0 bytes fails with
// EFBIG under a file-size limit) is said to be the trouble, and `run --once` fails. It used to
// read "another llmwatch holds the lease (being written)" and exit 0, which sends an operator
// looking for a second llmwatch (the chaos soak's read-only disk).
TEST(Daemon, ALeaseThatCannotBeWrittenIsSaidSoAndFailsTheRun) {
  TempDir dir;
  std::string config = dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + (dir / "state") + "\"\ninterval = \"30s\"\n");
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).started);  // the state exists, no lease held
  int err[2];
  ASSERT_EQ(pipe(err), 0);  // a pipe: the limit applies to files only
  pid_t pid = fork();
  if (pid == 0) {
    rlimit none{0, 0};
    setrlimit(RLIMIT_FSIZE, &none);
    signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails, as on a full disk
    dup2(err[1], 2);
    execl(llmwatch_bin().c_str(), "llmwatch", "--config", config.c_str(), "run", "--once", nullptr);
    _exit(127);
  }
  close(err[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 1) << text;
  EXPECT_NE(text.find("cannot renew or take the lease in " + (dir / "state") + ": cannot write " +
                      (dir / "state/lease") + ": File too large"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("another llmwatch"), std::string::npos) << text;
}

// The tests read the daemon's state while it runs: a read that meets the daemon's write lock
// waits for it, as llmwatch's own readers do, rather than answer nothing. (A crash test read
// "no restart" once, right after it had seen one, and failed.)
TEST(IntegrationHelpers, AStateReadWaitsForAWriteLock) {
  TempDir dir;
  std::string state = dir.path, db = dir / "state.db", ready = dir / "locked";
  llmwatch_sql(state, "CREATE TABLE t(v INTEGER); INSERT INTO t VALUES (42);");
  BackgroundProcess holder({"python3", "-c",
                            "import sqlite3, sys, time\n"
                            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                            "c.execute('BEGIN EXCLUSIVE')\n"
                            "open(sys.argv[2], 'w').close()\n"
                            "time.sleep(2)\n"
                            "c.execute('COMMIT')\n",
                            db, ready},
                           dir / "holder.log");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }, 20));
  EXPECT_EQ(llmwatch_sql(state, "SELECT v FROM t"), "42\n");
}

// A run that prints a step, then 6-8 s later a second one and an NCCL error, then
// `after_crash` (shell) before it exits 1, on the local cluster, supervised by a daemon ticking
// every `interval` started once the first step is out: how long after the daemon started the
// restart was done, and the daemon's log. With Blame::Log, the error names the task's node (its
// NCCL WARN line, as a real rank's); with Blame::NodeCheck it names none, [gpu] is on, and the
// node's kernel log gets an Xid 79 just before the error (node-check: CRITICAL); with
// Blame::Unchecked it names none and [gpu] is on, but node-check cannot look (no nvidia-smi:
// UNKNOWN), so nothing says what to avoid before the task's end. Each time, the run waits for
// the restarted run to be RUNNING: how long after the crashed task's exit.
struct CrashRun {
  double restarted_s = 0;
  std::string log;
  std::string restart_detail;
  double rerun_after_exit_s = -1;
};
enum class Blame { None, Log, NodeCheck, Unchecked };
CrashRun crash_run(const std::string& name, const std::string& interval, int step_s,
                   const std::string& after_crash, Blame blame = Blame::None) {
  const bool names_node = blame == Blame::Log;
  CrashRun out;
  LocalCluster c;
  EXPECT_TRUE(c.error.empty()) << c.error;
  if (!c.error.empty()) return out;
  std::string state = c.dir / "state";
  std::string config = c.dir / "llmwatch.toml";
  std::string gpu, xid;
  if (blame == Blame::Unchecked)
    gpu = "[gpu]\nenabled = true\nkernel_log = \"none\"\nnvlink = false\nnvidia_smi = \"" +
          (c.dir / "no-nvidia-smi") + "\"\nnode_state_dir = \"" + (c.dir / "nodestate") + "\"\n";
  if (blame == Blame::NodeCheck) {
    // Each node's kernel log, which the job (its owner) appends the Xid to.
    std::string kmsg = c.dir / "kmsg";
    std::filesystem::create_directories(kmsg);
    for (int i = 1; i <= 4; ++i) {
      std::string node_log = kmsg + "/node-" + std::to_string(i) + ".log";
      write_file(node_log, "[1.0] Linux version 6.1\n");
      using std::filesystem::perms;
      std::filesystem::permissions(node_log, perms::owner_read | perms::owner_write |
                                                 perms::group_read | perms::group_write |
                                                 perms::others_read | perms::others_write);
    }
    setenv("FAKE_NVSMI_MODE", "ok", 1);
    setenv("FAKE_NVSMI_QUERY", fixture("gpu/nvidia-smi-query-h100.csv").c_str(), 1);
    setenv("FAKE_NVSMI_APPS", "/dev/null", 1);
    gpu = "[gpu]\nenabled = true\nkernel_log = \"file\"\nkernel_log_path = \"" + kmsg +
          "/{node}.log\"\nnvlink = false\nnvidia_smi = \"" + source_dir() +
          "/tests/helpers/fake-nvidia-smi\"\nnode_state_dir = \"" + (c.dir / "nodestate") + "\"\n";
    xid =
        "echo '[171167.620236] NVRM: Xid (PCI:0000:00:09): 79, pid=<unknown>, name=<unknown>, "
        "GPU has fallen off the bus.' >> " +
        kmsg + "/$SLURMD_NODENAME.log\n";
  }
  write_file(config, "[llmwatch]\nstate_dir = \"" + state + "\"\ninterval = \"" + interval +
                         "\"\n" + gpu + "[[job]]\nname = \"" + name + "\"\n" + job_owner() +
                         "startup_grace = \"2m\"\n");
  std::string script = c.dir / "train.sh";
  write_file(script, "#!/bin/sh\necho 'global_step: 1'\nsleep " + std::to_string(step_s) +
                         "\necho 'global_step: 2'\n" + xid +
                         (names_node ? "echo \"$SLURMD_NODENAME:48211:48377 [5] NCCL WARN "
                                       "NET/IB : Got completion from peer 10.11.0.2 with error "
                                       "12\"\n"
                                     : "") +
                         "echo 'RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                         "system error'\n" +
                         after_crash + "date +%s.%N > " + (c.dir / "exited") + "\nexit 1\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  auto first = c.slurm({"sbatch", "--parsable", "--job-name=" + name, "--nodes=1",
                        "--output=" + (c.dir / "crash-%j.out"), script});
  EXPECT_TRUE(first.ok()) << first.err;
  if (!first.ok()) return out;
  const std::string id = first.out.substr(0, first.out.find_first_of(";\n"));
  EXPECT_TRUE(eventually(
      [&] {
        return read_file(c.dir / ("crash-" + id + ".out")).find("global_step: 1") !=
               std::string::npos;
      },
      60));
  const double started = unix_now();
  BackgroundProcess d({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  auto restarted_at = [&] {
    auto r =
        llmwatch_sql(state, "SELECT finished FROM actions WHERE kind='restart' AND state='done'");
    return r.empty() ? 0.0 : std::atof(r.c_str());
  };
  double restarted = 0;  // read once: the value tested is the value reported
  EXPECT_TRUE(eventually([&] { return (restarted = restarted_at()) > 0; }, 90)) << read_file(d.log);
  if (restarted > 0) out.restarted_s = restarted - started;
  std::cout << name << ": restarted " << out.restarted_s << " s after the daemon started\n";
  out.restart_detail =
      llmwatch_sql(state, "SELECT detail FROM actions WHERE kind='restart' AND state='done'");
  double rerun = 0;
  {
    EXPECT_TRUE(eventually(
        [&] {
          for (const auto& j : c.jobs())
            if (j.value("name", "") == name && std::to_string(j.value("job_id", 0)) != id &&
                j.value("job_state", "") == "RUNNING")
              return (rerun = unix_now()) > 0;
          return false;
        },
        90))
        << read_file(d.log);
  }
  if (rerun > 0) {
    out.rerun_after_exit_s = rerun - std::atof(read_file(c.dir / "exited").c_str());
    std::cout << name << ": the restarted run RUNNING " << out.rerun_after_exit_s
              << " s after the crashed task exited\n";
  }
  out.log = read_file(d.log);
  kill(d.pid, SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << read_file(d.log);
  for (const auto& j : c.jobs()) c.slurm({"scancel", std::to_string(j.value("job_id", 0))});
  return out;
}

// A crash is acted on when its log prints it, not at the next tick (#30): the daemon's sampler
// reads what a followed log grew by, finds the NCCL error, and brings the next cycle forward
// (never sooner than half an interval after the last: at most two polls an interval). With a
// 1 min tick the run was restarted about 30 s after the daemon started, not 60 s; now about
// 10 s, as its wake's restart, waiting for the task's end, has Slurm asked about that task.
TEST(Daemon, ACrashInTheLogBringsTheNextCycleForward) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = crash_run("crash-soon", "60s", 8, "");
  ASSERT_GT(run.restarted_s, 0);
  EXPECT_NE(run.log.find("printed a crash signature"), std::string::npos) << run.log;
  // Before the second regular tick (60 s after the first).
  EXPECT_LT(run.restarted_s, 55) << run.log;
}

// A crashed task that outlives the early tick (its other ranks hang on, a slow epilog), whose
// crash nothing attributes yet ([gpu] on, node-check unable to look), has its restart wait for
// its end (#30). With a 30 s tick: the crash brings a cycle to about 15 s, the
// task is still there and the restart waits. Slurm is then asked about that task alone every
// 2 s (`scontrol show job`, no poll of the queue), and the wake that finds it ended restarts the
// run, about 20 s after the daemon started. Before, the daemon looked again half an interval
// later (about 30 s); before that, at the regular tick (about 45 s). The delay from the task's
// exit to the new run RUNNING is a figure, not asserted.
TEST(Daemon, ARestartWaitingForItsTaskToEndIsDoneWhenSlurmSaysItEnded) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = crash_run("crash-linger", "30s", 6, "sleep 14\n", Blame::Unchecked);
  ASSERT_GT(run.restarted_s, 0);
  EXPECT_NE(run.log.find("an action waits: the next cycle in"), std::string::npos) << run.log;
  EXPECT_LT(run.restarted_s, 40) << run.log;
  // Done by the wake that found the task ended, before the look half an interval on.
  auto ended = run.log.find("wake: a task a restart waits for has ended");
  auto restarted = run.log.find(": done (resubmitted ");
  ASSERT_NE(ended, std::string::npos) << run.log;
  EXPECT_LT(ended, restarted) << run.log;
  EXPECT_EQ(run.log.find("cycle done", ended), run.log.find("cycle done", restarted))
      << "restarted by that wake's cycle\n"
      << run.log;
}

// #30: a crash whose log names its node is restarted as soon as the daemon's sampler reads it,
// by a cycle on the tick's snapshot (no poll), queued behind the task that still lingers
// (--dependency=afternotok): Slurm starts the new run the moment the task is gone, not at
// llmwatch's next look (the test above: 30 s after the daemon started). Before the sampler's
// cycle, the restart waited for the cycle brought forward, 15 s after the daemon started. The
// delay from the task's exit to the new run RUNNING is a figure, not asserted.
TEST(Daemon, ACrashThatNamesItsNodeIsRestartedTheMomentItsTaskIsGone) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = crash_run("crash-queued", "30s", 6, "sleep 20\n", Blame::Log);
  ASSERT_GT(run.restarted_s, 0);
  EXPECT_NE(run.restart_detail.find("to start once"), std::string::npos) << run.restart_detail;
  EXPECT_NE(run.restart_detail.find("excluding node-"), std::string::npos) << run.restart_detail;
  EXPECT_GE(run.rerun_after_exit_s, 0) << run.log;
  // Done by the sampler's cycle: before the cycle it brings forward was scheduled.
  auto replayed = run.log.find("wake: a followed log printed a crash");
  auto restarted = run.log.find("action restart for job:crash-queued/crashed: done");
  auto sooner = run.log.find("a followed log printed a crash: the next cycle in");
  ASSERT_NE(replayed, std::string::npos) << run.log;
  EXPECT_LT(replayed, restarted) << run.log;
  EXPECT_LT(restarted, sooner) << run.log;
}

// #30: a crash whose log names no node (a CUDA error), on a node whose kernel log shows an Xid
// 79: the cycle that reads it runs node-check in the dying task (srun --overlap), finds the node
// CRITICAL, and queues the restart behind the task, off that node. Before, the restart waited
// for the task's end and a node-check after it (the test above: 30 s after the daemon
// started, with [gpu] off). The delay from the task's exit to the new run RUNNING is a figure.
TEST(Daemon, ACrashThatNamesNoNodeIsCheckedInItsTaskAndQueuedBehindIt) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = crash_run("crash-checked", "30s", 6, "sleep 20\n", Blame::NodeCheck);
  ASSERT_GT(run.restarted_s, 0);
  EXPECT_NE(run.restart_detail.find("to start once"), std::string::npos) << run.restart_detail;
  EXPECT_NE(run.restart_detail.find("excluding node-"), std::string::npos) << run.restart_detail;
  EXPECT_GE(run.rerun_after_exit_s, 0) << run.log;
}

// #30: with [gpu] off there is no node-check to wait for, so a crash whose log names no node
// is queued behind its lingering task as soon as the sampler reads it, as one that names its
// node is. Before, its restart waited for Slurm to say the task ended (the test above). The
// delay from the task's exit to the new run RUNNING is a figure, not asserted.
TEST(Daemon, ACrashThatNamesNoNodeWithGpuOffIsQueuedBehindItsTask) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = crash_run("crash-unnamed", "30s", 6, "sleep 20\n");
  ASSERT_GT(run.restarted_s, 0);
  EXPECT_NE(run.restart_detail.find("to start once"), std::string::npos) << run.restart_detail;
  EXPECT_EQ(run.restart_detail.find("excluding"), std::string::npos) << run.restart_detail;
  EXPECT_GE(run.rerun_after_exit_s, 0) << run.log;
}

// What a two-rank run did after its rank 1 printed an NCCL error raised to Python.
struct RankCrash {
  std::string events;  // the rank-exit events
  std::string hung;    // the hang finding's summary
  std::string log;     // the daemon's
  bool restarted = false;
};

// `world` ranks, a task each (SLURM_PROCID) on as many nodes; 5 s steps (two intervals, 10 s,
// are more than the 8 s the look saves); at step 7 every rank but 0 prints a DistBackendError
// traceback and ends as `rank1_ends` says (Python at the line's indent), rank 0 waits on in the
// collective they left. `prefixed`: their lines say "[rank1]: " (else nothing names their rank,
// as in most logs). srun's own lines ("task 1: Exited") are not the run's log. Prints the crash
// line -> cancel delay, a figure.
RankCrash rank_crash_run(const std::string& name, const std::string& rank1_ends, bool prefixed,
                         int world = 2, bool python_launcher = false) {
  RankCrash out;
  LocalCluster c;
  EXPECT_TRUE(c.error.empty()) << c.error;
  if (!c.error.empty()) return out;
  const std::string state = c.dir / "state", config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + state +
                         "\"\ninterval = \"10s\"\n[[job]]\nname = \"" + name + "\"\n" +
                         job_owner() + "startup_grace = \"2m\"\n");
  const std::string work = c.dir / "work";
  std::filesystem::create_directories(work);
  write_file(work + "/train.py", R"py(
import os, sys, threading, time
rank = int(os.environ["SLURM_PROCID"])
prefix = f")py" + std::string(prefixed ? "[rank{rank}]: " : "") +
                                     R"py("
for step in range(1, 1000):
    time.sleep(5)
    if rank == 0:
        print(f"global_step: {step}", flush=True)
    if step == 7:
        if rank > 0:
            time.sleep(1)
            print(f"{prefix}Traceback (most recent call last):", flush=True)
            print(f"{prefix}torch.distributed.DistBackendError: NCCL error in: "
                  "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error",
                  flush=True)
            open(os.path.join(os.path.dirname(__file__), "crashed"), "w").write(str(time.time()))
)py" + rank1_ends + R"py(
        time.sleep(3600)  # waits in the collective rank 1 left
)py");
  const std::string step = "srun --kill-on-bad-exit=0 /usr/bin/python3 -u " + work + "/train.py";
  write_file(work + "/train.sh",
             python_launcher
                 ? "#!/usr/bin/python3\nimport subprocess, sys\nsys.exit(subprocess.call('" + step +
                       "'.split(), stderr=subprocess.DEVNULL))\n"
                 : "#!/bin/sh\n" + step + " 2>/dev/null\n");
  std::filesystem::permissions(work + "/train.sh", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  auto first = c.slurm({"sbatch", "--parsable", "--job-name=" + name,
                        "--nodes=" + std::to_string(world), "--ntasks-per-node=1",
                        "--chdir=" + work, "--output=" + work + "/train.out", work + "/train.sh"});
  EXPECT_TRUE(first.ok()) << first.err;
  if (!first.ok()) return out;
  const std::string id = first.out.substr(0, first.out.find_first_of(";\n"));
  EXPECT_TRUE(eventually(
      [&] { return read_file(work + "/train.out").find("global_step: 1") != std::string::npos; },
      60));
  BackgroundProcess d({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  auto cancelled_at = [&] {
    auto r =
        llmwatch_sql(state, "SELECT finished FROM actions WHERE kind='cancel' AND state='done'");
    return r.empty() ? 0.0 : std::atof(r.c_str());
  };
  double cancelled = 0;
  if (eventually([&] { return (cancelled = cancelled_at()) > 0; }, 120)) {
    out.events = llmwatch_sql(state, "SELECT message FROM events WHERE kind='rank-exit'");
    out.hung =
        llmwatch_sql(state, "SELECT summary FROM findings WHERE key='job:" + name + "/hung'");
    const double crashed = std::atof(read_file(work + "/crashed").c_str());
    std::cout << name << ": cancelled " << cancelled - crashed << " s after rank 1's crash line\n";
    // And restarted: a new job of the run runs.
    out.restarted = eventually(
        [&] {
          for (const auto& j : c.jobs())
            if (j.value("name", "") == name && std::to_string(j.value("job_id", 0)) != id &&
                j.value("job_state", "") == "RUNNING")
              return true;
          return false;
        },
        90);
  } else {
    ADD_FAILURE() << "not cancelled\n" << read_file(work + "/train.out");
  }
  kill(d.pid, SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0);
  out.log = read_file(d.log);
  for (const auto& j : c.jobs()) c.slurm({"scancel", std::to_string(j.value("job_id", 0))});
  return out;
}

// #30: a rank's NCCL error raised to Python (a DistBackendError traceback, which a trainer may
// catch), the rank's process gone, its peer waiting in the collective it left, and nothing in
// the log that says the rank exited (srun's own words go elsewhere): the run waited two step
// intervals and a confirmation, ~20-30 s from its last step at 10 s steps. Now its task is asked
// 8 s after the line which ranks still run (`llmwatch stacks --ranks`, no dump); rank 1 is gone,
// so the line is one no rank goes on from and the hang is found then, dumped, confirmed and
// restarted. The crash line -> cancel delay is a figure, not asserted.
TEST(Daemon, ARankGoneAfterItsRaisedNcclErrorIsSeenGoneAndItsRunRestarted) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = rank_crash_run("rank-gone", "            sys.exit(1)\n", true);
  EXPECT_NE(run.events.find("ended: task 1's process has ended; the other 1 rank still runs (all "
                            "2 nodes answered)"),
            std::string::npos)
      << run.events << run.log;
  EXPECT_NE(run.hung.find("whose rank's process has since ended"), std::string::npos) << run.hung;
  EXPECT_TRUE(run.restarted) << run.log;
}

// #30: the same error on two ranks of three, with the batch script a Python launcher that
// starts the ranks' step (srun) and waits on it. The batch step's environment names task 0
// (SLURM_PROCID=0) as the step's task 0 does, so until stop 83 the look saw "SLURM_PROCID 0 is
// named by two processes" and said unknown for every line of such a job (crash line -> cancel
// 15.2 s at world 2). A process of the batch step names no rank where an srun step runs Python
// on its node, and, in another step than the ranks', starts none of them again: two gone have
// ended.
TEST(Daemon, RanksGoneUnderAPythonLauncherAreSeenGone) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = rank_crash_run("ranks-gone-launcher", "            sys.exit(1)\n", true, 3, true);
  // Ranks 1 and 2 print at once: the line read first may be either's ("[rank2]: ...").
  EXPECT_NE(run.events.find("'s process has ended (its step has no process but its ranks to start "
                            "it again); 2 of 3 ranks have ended (0 exiting, 2 gone); the other 1 "
                            "rank still runs (all 3 nodes answered)"),
            std::string::npos)
      << run.events << run.log;
  EXPECT_TRUE(run.restarted) << run.log;
}

// #30: the same error, but the ranks' processes linger in their exit: the exception left their
// program, and their interpreter waits to join a thread that never ends (as a process group's
// destructor or a stuck atexit handler would hold it). Their processes are there, so the look
// said "running" and the run waited two step intervals and a confirmation. Since stop 78 the
// look attaches gdb to the process of the rank a line names and sees its main thread in
// Py_FinalizeEx: ended as well. Here the lines name no rank, as most logs' do: each rank's
// process is looked into (`--every-rank`). Two ranks of three raise, as the ranks on both ends
// of a failed link do: whichever printed the line, their programs have ended (since stop 81;
// before, two ended meant unknown and the run waited its two step intervals: the event said
// "unknown: 2 of 3 ranks have ended"; the one rank's case is RankExitLook's, and was this
// test's at stop 80: crash line -> cancel 8.1 s).
TEST(Daemon, RanksLingeringInTheirExitAfterAnUnnamedNcclErrorAreSeenEndedAndTheirRunRestarted) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run =
      rank_crash_run("rank-exiting",
                     "            threading.Thread(target=time.sleep, args=(3600,)).start()\n"
                     "            sys.exit(1)\n",
                     false, 3);
  EXPECT_NE(run.events.find("ended: task 1's process is exiting (Py_FinalizeEx on its main "
                            "thread, node-"),
            std::string::npos)
      << run.events << run.log;
  EXPECT_NE(run.events.find("its program has ended; 2 of 3 ranks have ended (2 exiting, 0 gone); "
                            "the other 1 rank still runs (all 3 nodes answered)"),
            std::string::npos)
      << run.events;
  EXPECT_NE(run.hung.find("whose rank's process has since ended or is exiting"), std::string::npos)
      << run.hung;
  // The look's gdb took each rank's stack too: the hang's first dump, so the dump once the hang
  // is found is its second, and the cancel follows at once (since stop 80; before, a first dump
  // then and a second 4 s later: crash line -> cancel 12.0 s here).
  EXPECT_NE(run.events.find("its ranks' stacks are the hang's first dump (3 processes: "),
            std::string::npos)
      << run.events;
  EXPECT_TRUE(run.restarted) << run.log;
}

// #30: the same error on two ranks of three, each started by srun (no launcher beside them),
// whose processes end at once: two gone and none exiting. Under torchrun that is what an
// elastic agent restarting its workers looks like, so until stop 82 it was unknown whatever
// launched the ranks, and the run waited its two step intervals and a confirmation (the event
// said "unknown: 2 of 3 ranks not found"). Here the job has no process but its ranks, so
// nothing is left to start them again: ended, as one rank gone is.
TEST(Daemon, RanksGoneAfterAnUnnamedNcclErrorWithNothingToStartThemAgainAreSeenEnded) {
  LLMWATCH_REQUIRE_CLUSTER();
  auto run = rank_crash_run("ranks-gone", "            sys.exit(1)\n", false, 3);
  EXPECT_NE(run.events.find("ended: task 1's process has ended (the job has no process but its "
                            "ranks to start it again); 2 of 3 ranks have ended (0 exiting, 2 "
                            "gone); the other 1 rank still runs (all 3 nodes answered)"),
            std::string::npos)
      << run.events << run.log;
  EXPECT_NE(run.hung.find("whose rank's process has since ended"), std::string::npos) << run.hung;
  EXPECT_TRUE(run.restarted) << run.log;
}

}  // namespace
}  // namespace llmwatch::testing

// Hang forensics on the real local cluster: a python3 trainer hangs in a function; before
// llmwatch cancels it, `srun --overlap` runs `llmwatch stacks` on its node, gdb (with CPython's
// py-bt helper from python3.11-dbg) takes the real stack, and the events, the kept dump and
// `llmwatch job` say where it hung.
#include <sys/stat.h>

#include <filesystem>

#include "local_cluster.h"
#include "util/units.h"

namespace llmwatch::testing {
namespace {

// A quick hang allowance for tests: a 6 s floor.
constexpr const char* kQuickAllowance =
    "stale_floor = \"6s\"\nfirst_steps_grace = \"6s\"\nstale_ceiling = \"1m\"\n";

// A python3 trainer (the given script) watched as job `name` with `allowance` (a 6 s stale
// floor unless told) and on_hang = dump, alert, cancel, plus `extra` [[job]] keys.
struct PythonRun {
  LocalCluster& c;
  std::string work, config, id;
  PythonRun(LocalCluster& cluster, const std::string& name, const std::string& script,
            const std::string& extra = "", const std::string& python = "python3",
            const std::string& allowance = kQuickAllowance)
      : c(cluster), work(c.dir / "work"), config(c.dir / "llmwatch.toml") {
    std::filesystem::create_directories(work);
    write_file(work + "/train.py", script);
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\n[slurm]\ntimeout = \"10s\"\n[[job]]\n" + job_owner() + "name = \"" +
                           name + "\"\n" + allowance +
                           "startup_grace = \"1m\"\non_hang = [\"dump\", \"alert\", \"cancel\"]\n" +
                           extra);
    auto sub = c.slurm({"sbatch", "--parsable", "--job-name=" + name, "--nodes=1",
                        "--chdir=" + work, "--output=" + work + "/out-%j.txt", "--wrap",
                        "exec " + python + " -u " + work + "/train.py"});
    EXPECT_TRUE(sub.ok()) << sub.err;
    id = sub.out.substr(0, sub.out.find_first_of(";\n"));
  }
  std::string events() { return llmwatch(config, {"events"}).out; }
  // Runs cycles until the events say `what`.
  bool cycles_until(const std::string& what) {
    return eventually(
        [&] {
          llmwatch(config, {"run", "--once"});
          return events().find(what) != std::string::npos;
        },
        90);
  }
};

// A Python trainer with `defs`: twelve 1 s steps (under load the cycles that learn the step
// interval must still see several of them), then one rank's NCCL error line, then `then`.
std::string after_fatal_line(const std::string& defs, const std::string& then) {
  return "import time\n" + defs +
         "for step in range(1, 13):\n"
         "    print(f'global_step: {step}', flush=True)\n"
         "    time.sleep(1)\n"
         "print('[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
         "system error', flush=True)\n" +
         then;
}

// A trainer that takes three steps, then waits in one function for good, as a rank in a
// collective that never completes: its frames the same at every dump.
constexpr const char* kHungTrainer =
    "import time\n"
    "def allreduce_wait():\n"
    "    while True:\n"
    "        time.sleep(0.2)\n"
    "for step in range(1, 4):\n"
    "    print(f'global_step: {step}', flush=True)\n"
    "    time.sleep(0.3)\n"
    "allreduce_wait()\n";

#define REQUIRE_GDB()                                                                              \
  do {                                                                                             \
    if (std::system("gdb --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "gdb is not installed"; \
  } while (0)

TEST(HangForensics, AHungPythonTrainersRealStackIsTakenBeforeTheCancel) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_GDB();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  PythonRun run(c, "itest-hang", kHungTrainer);
  ASSERT_FALSE(run.id.empty());
  ASSERT_TRUE(run.cycles_until("cancel done")) << run.events();
  std::string config = run.config;
  std::string events = llmwatch(config, {"events"}).out;
  EXPECT_NE(events.find("dump done: 1 process: 1 in allreduce_wait (train.py:4)"),
            std::string::npos)
      << events;
  // The dump came first: the stack is of the live process, then it was cancelled.
  EXPECT_LT(events.find("dump done"), events.find("cancel done")) << events;
  // What forensics costs: the longest cycle (the one that dumped, then cancelled), a figure
  // for the README, not an assertion.
  RecordProperty("longest_cycle_s",
                 llmwatch_sql(c.dir / "state", "SELECT MAX(finished - started) FROM cycles"));
  RecordProperty(
      "typical_cycle_s",
      llmwatch_sql(c.dir / "state", "SELECT finished - started FROM cycles ORDER BY id LIMIT 1"));
  auto job = llmwatch(config, {"job", "itest-hang"}).out;
  EXPECT_NE(job.find("allreduce_wait (train.py:4)"), std::string::npos) << job;
}

// Confirmation (confirm_hang): a run that prints no step but is busy (its stack grows every
// half second, as a long evaluation or a slow step would move) is a near miss, not a hang:
// no cancel, the hang clock restarts. Once per task: the next detection is acted on.
TEST(HangForensics, StacksThatMoveAreANearMissNotACancel) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_GDB();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  PythonRun run(c, "itest-busy",
                "import time\n"
                "def evaluate(depth):\n"
                "    time.sleep(0.5)\n"
                "    evaluate(depth + 1)\n"
                "for step in range(1, 4):\n"
                "    print(f'global_step: {step}', flush=True)\n"
                "    time.sleep(0.3)\n"
                "evaluate(0)\n",
                "confirm_hang = \"2s\"\n");
  ASSERT_FALSE(run.id.empty());
  auto events = [&] { return run.events(); };
  std::string config = run.config, id = run.id;
  ASSERT_TRUE(run.cycles_until("near miss")) << events();
  EXPECT_EQ(events().find("cancel done"), std::string::npos) << events();
  EXPECT_NE(c.slurm({"scontrol", "show", "job", id}).out.find("JobState=RUNNING"),
            std::string::npos);
  // The clock restarted at the near miss: the next cycle finds no hang to act on.
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  EXPECT_EQ(llmwatch_sql(c.dir / "state", "SELECT COUNT(*) FROM actions WHERE kind='cancel'"),
            "0\n");
  // Once per task: when it is found idle again, it is cancelled.
  EXPECT_TRUE(run.cycles_until("cancel done")) << events();
}

// One rank printed an NCCL error and died; its peers wait in the collective (#30). At the
// shipped allowance (45 s floor) the run is found after two of its step intervals, at least
// 8 s, not 45 s: dumped, confirmed by a second dump a step interval (at least 4 s) later (the
// frames did not move) and cancelled.
// The time from the crash line to the cancel is a figure, not an assertion.
TEST(HangForensics, PeersWaitingAfterAFatalCrashLineAreFoundAfterTwoStepIntervals) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_GDB();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  PythonRun run(c, "itest-peers",
                after_fatal_line("def allreduce_wait():\n"
                                 "    while True:\n"
                                 "        time.sleep(0.2)\n",
                                 "print(time.time(), flush=True)\n"
                                 "allreduce_wait()\n"),
                "", "python3", "");
  ASSERT_FALSE(run.id.empty());
  ASSERT_TRUE(run.cycles_until("cancel done")) << run.events();
  const double cancelled = unix_now();
  std::string events = run.events();
  EXPECT_NE(events.find("after a nccl-error line"), std::string::npos) << events;
  EXPECT_NE(events.find("dump done: 1 process: 1 in allreduce_wait"), std::string::npos) << events;
  EXPECT_EQ(events.find("near miss"), std::string::npos) << events;
  std::string out = read_file(run.work + "/out-" + run.id + ".txt");
  auto at = out.find("system error\n");
  ASSERT_NE(at, std::string::npos) << out;
  double crashed = std::atof(out.c_str() + at + std::string("system error\n").size());
  RecordProperty("crash_line_to_cancel_s", std::to_string(cancelled - crashed));
  std::cout << "crash line -> cancel within " << cancelled - crashed << " s\n";
}

// The other side of the shorter confirmation after a fatal line: a rank that caught the error
// and goes on (as an elastic trainer rebuilding its communicators does, here with a stack that
// grows every half second) prints no step, but its stacks move between the two dumps, taken one
// step interval (at least 4 s) apart: a near miss, not a cancel, and the finding and the first
// dump say why it was looked at so soon. Before, the second dump came confirm_hang (10 s) later.
TEST(HangForensics, ARunThatGoesOnAfterAFatalLineIsANearMissNotACancel) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_GDB();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  PythonRun run(c, "itest-rebuild",
                after_fatal_line("def rebuild(depth):\n"
                                 "    time.sleep(0.5)\n"
                                 "    rebuild(depth + 1)\n",
                                 "rebuild(0)\n"),
                "", "python3", "");
  ASSERT_FALSE(run.id.empty());
  ASSERT_TRUE(run.cycles_until("near miss")) << run.events();
  std::string events = run.events();
  EXPECT_NE(events.find("after a nccl-error line"), std::string::npos) << events;
  EXPECT_NE(events.find("a second one 4s later"), std::string::npos) << events;
  EXPECT_EQ(events.find("cancel done"), std::string::npos) << events;
  EXPECT_NE(c.slurm({"scontrol", "show", "job", run.id}).out.find("JobState=RUNNING"),
            std::string::npos);
}

// A hung rank under a launcher of torchrun's kind: the agent names itself pt_elastic, as
// torchrun does since torch 2.5 (so until stop 82 it was not listed as the job's Python at
// all), starts its worker with RANK, and keeps looping in its monitor, here deeper every half
// second, whatever the worker does. Its frames moving say nothing of the rank's: the hang is
// dumped with the agent in it, confirmed by the rank's unmoved frames, and cancelled. With the
// agent listed and its frames counted, the confirmation called it a near miss.
TEST(HangForensics, ALaunchersMovingFramesDoNotMakeAHungRankANearMiss) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_GDB();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  const std::string agent = c.dir / "work/agent.py";
  std::filesystem::create_directories(c.dir / "work");
  write_file(agent,
             "import ctypes, os, subprocess, sys, time\n"
             "ctypes.CDLL(None).prctl(15, b'pt_elastic', 0, 0, 0)\n"
             "worker = subprocess.Popen([sys.executable, '-u', sys.argv[-1]],\n"
             "                          env=dict(os.environ, RANK='0', WORLD_SIZE='1'))\n"
             "def monitor(depth):\n"
             "    time.sleep(0.5)\n"
             "    if worker.poll() is None:\n"
             "        monitor(depth + 1)\n"
             "monitor(0)\n");
  PythonRun run(c, "itest-agent", kHungTrainer, "confirm_hang = \"2s\"\n", "python3 -u " + agent);
  ASSERT_FALSE(run.id.empty());
  ASSERT_TRUE(run.cycles_until("cancel done")) << run.events();
  const std::string events = run.events();
  EXPECT_EQ(events.find("near miss"), std::string::npos) << events;
  // Both were dumped, the rank in its wait and the agent in its monitor; the summary groups the
  // rank and counts the agent.
  EXPECT_NE(events.find("dump done: 1 process: 1 in allreduce_wait (train.py:4) [node-1 pid "),
            std::string::npos)
      << events;
  EXPECT_NE(events.find("]; besides the ranks, 1 process of no rank"), std::string::npos) << events;
}

// The job's user ships a gdb script beside the program it runs (as `libx.so-gdb.py` beside a
// library) and the run hangs. The dump (gdb, started as root on the node) runs that script, if
// at all, as the job's user, never as root (#26.7: with the auto-load safe-path "/", the
// user's Python ran as root on every node of a hung job).
TEST(HangForensics, AUsersGdbScriptNeverRunsAsRoot) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_GDB();
  constexpr const char* kUser = "llmwatch-itest";
  auto user = lookup_user(kUser);
  if (!user || ::geteuid() != 0) GTEST_SKIP() << kUser << " and root are needed";
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  ::chmod(c.dir.path.c_str(), 0711);  // the job's user reaches its working directory
  std::string work = c.dir / "work", marker = work + "/marker";
  std::filesystem::create_directories(work);
  ::chmod(work.c_str(), 0777);
  std::filesystem::copy_file("/usr/bin/python3.11", work + "/python3");
  write_file(work + "/python3-gdb.py",
             "import os\nopen('" + marker + "', 'w').write(str(os.geteuid()))\n");
  write_file(work + "/train.py",
             "import time\nfor step in range(1, 4):\n    print(f'global_step: {step}', "
             "flush=True)\n    time.sleep(0.3)\nwhile True:\n    time.sleep(0.2)\n");
  for (const char* f : {"python3", "python3-gdb.py", "train.py"})
    ASSERT_EQ(::chown((work + "/" + f).c_str(), user->uid, user->gid), 0);
  std::string config = c.dir / "llmwatch.toml";
  write_file(config,
             "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                 "\"\n[slurm]\ntimeout = \"10s\"\n[[job]]\nname = \"itest-gdbpy\"\n"
                 "user = \"" +
                 kUser +
                 "\"\nstale_floor = \"6s\"\nfirst_steps_grace = \"6s\"\nstale_ceiling = \"1m\"\n"
                 "startup_grace = \"1m\"\non_hang = [\"dump\", \"alert\", \"cancel\"]\n");
  auto sub =
      // In the user's own group, as a job the user submitted is: a step as root with --uid
      // alone names root's group, and slurmd refuses it ("Invalid job credential").
      c.slurm({"sbatch", "--parsable", "--uid=" + std::string(kUser), "--gid=" + std::string(kUser),
               "--job-name=itest-gdbpy", "--chdir=" + work, "--output=" + work + "/out-%j.txt",
               "--wrap", "exec " + work + "/python3 -u " + work + "/train.py"});
  ASSERT_TRUE(sub.ok()) << sub.err;
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(config, {"run", "--once"});
        return llmwatch(config, {"events"}).out.find("cancel done") != std::string::npos;
      },
      90))
      << llmwatch(config, {"events"}).out;
  std::string events = llmwatch(config, {"events"}).out;
  // The dump ran (before: root's srun into a user's job was refused, "Access/permission
  // denied", so no user's hung job was ever dumped).
  EXPECT_NE(events.find("dump done"), std::string::npos) << events;
  if (std::filesystem::exists(marker)) {
    struct stat st {};
    ASSERT_EQ(::stat(marker.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, user->uid) << "the user's gdb script ran as uid " << read_file(marker);
    EXPECT_EQ(read_file(marker), std::to_string(user->uid));
  }
  RecordProperty("users_script_ran_as_user", std::filesystem::exists(marker) ? "yes" : "no");
}

}  // namespace
}  // namespace llmwatch::testing

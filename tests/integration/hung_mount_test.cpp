// A hung mount on the real local cluster (#13): a watched run's log sits on a file system
// that stops answering, as a dead NFS or Lustre mount does (tests/helpers/hang_fs.py, FUSE).
// Before, the log read had no deadline: the cycle blocked in the kernel for as long as the
// mount hung, and every other job went unwatched.
#include <sys/stat.h>

#include <fstream>
#include <future>
#include <thread>

#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

bool mounted(const std::string& path) {
  std::ifstream mounts("/proc/mounts");
  std::string dev, at, rest;
  while (mounts >> dev >> at && std::getline(mounts, rest))
    if (at == path) return true;
  return false;
}

// The FUSE file system, stopped and unmounted whatever the test did.
struct HangingMount {
  std::string backing, mount, control;
  std::unique_ptr<BackgroundProcess> fs;
  HangingMount(const std::string& dir)
      : backing(dir + "/backing"), mount(dir + "/mnt"), control(dir + "/hang") {
    std::filesystem::create_directories(backing);
    std::filesystem::create_directories(mount);
    fs = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/python3", source_dir() + "/tests/helpers/hang_fs.py",
                                 backing, mount, control},
        dir + "/hang_fs.log");
  }
  void hang() { write_file(control, "1"); }
  void answer() { std::filesystem::remove(control); }
  ~HangingMount() {
    answer();
    ProcessSpec spec;
    spec.argv = {"fusermount", "-uz", mount};  // lazy: a process may still hold it
    spec.timeout = std::chrono::seconds(10);
    run_process(spec);
  }
};

#define REQUIRE_FUSE()                                                                         \
  do {                                                                                         \
    if (access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no /dev/fuse on this machine"; \
    if (access("/usr/lib/python3/dist-packages/fusepy.py", R_OK) != 0)                         \
      GTEST_SKIP() << "python3-fusepy is not installed (setup.sh installs it)";                \
  } while (0)

// Mounted, or skipped where this machine cannot mount FUSE at all (the helper exits at once,
// saying why: no permission in a container, no fuse module). A helper that runs but never
// mounts is a failure.
#define WAIT_FOR_MOUNT(m)                                                                       \
  do {                                                                                          \
    bool up = eventually([&] { return mounted((m).mount) || (m).fs->wait_exit(0) != -1; }, 30); \
    if (up && !mounted((m).mount))                                                              \
      GTEST_SKIP() << "FUSE cannot mount here: " << read_file((m).fs->log);                     \
    ASSERT_TRUE(mounted((m).mount)) << read_file((m).fs->log);                                  \
  } while (0)

TEST(HungMount, ALogOnAHungMountIsUnknownNeverHungAndTheCycleGoesOn) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_FUSE();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  HangingMount m(c.dir.path);
  WAIT_FOR_MOUNT(m);
  std::string trainer = source_dir() + "/examples/fake-trainer.sh";
  auto submit = [&](const std::string& name, const std::string& dir) {
    std::filesystem::create_directories(dir);
    auto r = c.slurm({"sbatch", "--parsable", "--job-name=" + name, "--chdir=" + dir,
                      "--output=" + dir + "/train-%j.out",
                      "--export=ALL,FAKE_TRAINER_DIR=" + dir + ",FAKE_STEP_TIME=0.2", trainer});
    ASSERT_TRUE(r.ok()) << r.err;
  };
  // One run writes to the backing directory; llmwatch reads its log through the mount.
  submit("hm-remote", m.backing);
  // The other's log is on local disk: it must stay watched while the mount hangs.
  std::string local = c.dir / "local";
  submit("hm-local", local);
  std::string state = c.dir / "state", config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + state +
                         "\"\ninterval = \"1s\"\ncycle_deadline = \"20s\"\nlease_ttl = \"60s\"\n"
                         "file_timeout = \"1s\"\n[slurm]\ntimeout = \"10s\"\n"
                         "[[job]]\nname = \"hm-remote\"\n" +
                         job_owner() + "stale_floor = \"5s\"\nlogs = [\"" + m.mount +
                         "/train-%j.out\"]\n"
                         "[[job]]\nname = \"hm-local\"\n" +
                         job_owner() + "stale_floor = \"5s\"\n");
  auto number = [&](const std::string& sql) { return std::atol(llmwatch_sql(state, sql).c_str()); };
  // The step llmwatch holds for the run now (the progress series keeps one a minute).
  auto step_of = [&](const std::string& job) {
    return number("SELECT json_extract(value, '$.step') FROM kv WHERE key='progress:" + job + "'");
  };
  // The daemon, as on a login node: a thread stuck on the mount stays inside it, and cycles go on.
  BackgroundProcess daemon({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  // Both runs train and are followed through their logs.
  ASSERT_TRUE(eventually([&] { return step_of("hm-remote") > 0 && step_of("hm-local") > 0; }))
      << read_file(daemon.log);

  m.hang();
  long hung_at = static_cast<long>(time(nullptr));
  long local_before = step_of("hm-local");
  // Cycles go on past the run's stale_floor while the mount hangs (before: the first one
  // blocked until the mount answered); the remote run is unknown, never hung.
  EXPECT_TRUE(eventually(
      [&] {
        return number("SELECT COUNT(*) FROM cycles WHERE started > " +
                      std::to_string(hung_at + 8)) >= 2;
      },
      60))
      << "no cycle finished while the mount hung\n"
      << read_file(daemon.log);
  EXPECT_EQ(llmwatch_sql(state,
                         "SELECT severity, state FROM findings WHERE "
                         "key='job:hm-remote/log-unreadable'"),
            "unknown|firing\n");
  EXPECT_EQ(
      number("SELECT COUNT(*) FROM findings WHERE key LIKE 'job:hm-%/hung' AND state='firing'"), 0);
  EXPECT_EQ(number("SELECT COUNT(*) FROM actions WHERE kind != 'alert'"), 0);
  // The run on local disk was still followed.
  EXPECT_GT(step_of("hm-local"), local_before);

  // The mount answers again: the remote run is followed from where it was.
  long remote_before = step_of("hm-remote");
  m.answer();
  EXPECT_TRUE(eventually([&] {
    return step_of("hm-remote") > remote_before &&
           llmwatch_sql(state,
                        "SELECT state FROM findings WHERE "
                        "key='job:hm-remote/log-unreadable'") != "firing\n";
  }));
  kill(daemon.pid, SIGTERM);
  EXPECT_EQ(daemon.wait_exit(60), 0);
  for (const auto& j : c.jobs())
    if (j["job_state"] == "RUNNING") c.slurm({"scancel", std::to_string(j["job_id"].get<int>())});
}

// Whoever waits for llmwatch (cron, the self-job's batch script, systemd, a shell) must get
// it back while a read is still stuck on the hung mount. Before, `run --once` finished its
// cycle but could not exit: a process does not end while one of its threads is blocked in the
// kernel, so it waited as long as the mount hung, and so did a daemon told to stop.
TEST(HungMount, RunOnceAndADaemonStopEndWhileAReadIsStuckInTheKernel) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_FUSE();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  HangingMount m(c.dir.path);
  WAIT_FOR_MOUNT(m);
  auto r = c.slurm({"sbatch", "--parsable", "--job-name=hm-exit", "--chdir=" + m.backing,
                    "--output=" + m.backing + "/train-%j.out",
                    "--export=ALL,FAKE_TRAINER_DIR=" + m.backing + ",FAKE_STEP_TIME=0.2",
                    source_dir() + "/examples/fake-trainer.sh"});
  ASSERT_TRUE(r.ok()) << r.err;
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  std::string log = m.backing + "/train-" + id + ".out";
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(log); }));
  std::string state = c.dir / "state", config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + state +
                         "\"\ninterval = \"1s\"\ncycle_deadline = \"20s\"\nlease_ttl = \"60s\"\n"
                         "file_timeout = \"1s\"\n[slurm]\ntimeout = \"10s\"\n"
                         "[[job]]\nname = \"hm-exit\"\n" +
                         job_owner() + "logs = [\"" + m.mount + "/train-%j.out\"]\n");
  auto cycles = [&] {
    return std::atol(llmwatch_sql(state, "SELECT COUNT(*) FROM cycles").c_str());
  };
  m.hang();
  BackgroundProcess once({llmwatch_bin(), "--config", config, "run", "--once"}, c.dir / "once.log");
  int once_rc = once.wait_exit(40);
  long once_cycles = cycles();
  BackgroundProcess daemon({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  bool daemon_cycled = eventually([&] { return cycles() > once_cycles; }, 40);
  kill(daemon.pid, SIGTERM);
  int daemon_rc = daemon.wait_exit(40);
  m.answer();  // frees whatever is still stuck, before the processes are reaped
  EXPECT_EQ(once_rc, 0) << "run --once did not return while the mount hung\n"
                        << read_file(once.log);
  EXPECT_EQ(once_cycles, 1);
  EXPECT_TRUE(daemon_cycled) << read_file(daemon.log);
  EXPECT_EQ(daemon_rc, 0) << "the daemon did not stop while the mount hung\n"
                          << read_file(daemon.log);
  EXPECT_EQ(
      llmwatch_sql(state, "SELECT severity FROM findings WHERE key='job:hm-exit/log-unreadable'"),
      "unknown\n");
  c.slurm({"scancel", id});
}

// A command blocked in the kernel on the hung mount does not die of SIGKILL. Before,
// run_process waited for it forever (12 minutes here, until the mount answered); now it gives
// up shortly after the deadline and the command is reaped whenever it goes.
TEST(HungMount, ACommandStuckInTheKernelIsGivenUpAtItsDeadline) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_FUSE();
  TempDir dir;
  HangingMount m(dir.path);
  WAIT_FOR_MOUNT(m);
  write_file(m.backing + "/x", "hello\n");
  m.hang();
  auto result = std::make_shared<std::promise<ProcessResult>>();
  auto future = result->get_future();
  std::thread([result, path = m.mount + "/x"] {
    ProcessSpec spec;
    spec.argv = {"cat", path};
    spec.timeout = std::chrono::seconds(1);
    result->set_value(run_process(spec));
  }).detach();
  bool returned = future.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  m.answer();  // frees the stuck command either way
  ASSERT_TRUE(returned) << "run_process still waits for a command stuck in the kernel";
  auto r = future.get();
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.describe("cat").find("did not exit after SIGKILL"), std::string::npos)
      << r.describe("cat");
}

}  // namespace
}  // namespace llmwatch::testing

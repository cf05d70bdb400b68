// Restarting runs that died: resubmission away from bad nodes, and crash loops that stop.
#include "local_cluster.h"
#include "slurm/hostlist.h"
#include "store/store.h"

namespace llmwatch::testing {
namespace {

std::string write_config(LocalCluster& c, const std::string& job_keys) {
  std::string config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                         "\"\n[slurm]\ntimeout = \"10s\"\n" + "[[job]]\n" + job_owner() +
                         "name = \"itest-train\"\nstartup_grace = \"1m\"\nstale_floor = \"1m\"\n" +
                         job_keys);
  return config;
}

std::vector<nlohmann::json> queued(const LocalCluster& c, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& j : c.jobs())
    if (j["name"] == name && j["job_state"] != "COMPLETED" && j["job_state"] != "CANCELLED" &&
        j["job_state"] != "FAILED" && j["job_state"] != "TIMEOUT")
      out.push_back(j);  // RUNNING, PENDING, COMPLETING, CONFIGURING: still in play
  return out;
}

// Runs cycles until `status` shows the watched run at `step` or past it (in task `task`, when
// one is given), for at most 60 s.
bool trains_to(const std::string& config, int step, const std::string& task = "") {
  return eventually(
      [&] {
        llmwatch(config, {"run", "--once"});
        auto s = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out, nullptr, false);
        return s.is_object() && (task.empty() || s["jobs"][0]["task"] == task) &&
               s["jobs"][0].value("step", 0) >= step;
      },
      60);
}

// A local cluster running `itest-train`, submitted with `how` (sbatch's arguments after its
// name, node count, workdir and output), and a config that restarts it once it is gone.
struct DeadRunSetup {
  LocalCluster c;
  std::string work = c.dir / "work", config, first;
  template <class How>  // std::vector<std::string>(const std::string& work)
  explicit DeadRunSetup(How how, std::map<std::string, std::string> cluster_env = {})
      : c(4, std::move(cluster_env)) {
    if (!c.error.empty()) return;
    std::filesystem::create_directories(work);
    config = write_config(c, "on_absent = [\"alert\", \"restart\"]\n");
    std::vector<std::string> args = {
        "sbatch",    "--parsable",      "--job-name=itest-train",
        "--nodes=1", "--chdir=" + work, "--output=" + work + "/train-%j.out"};
    for (auto& a : how(work)) args.push_back(std::move(a));
    auto sub = c.slurm(args);
    EXPECT_TRUE(sub.ok()) << sub.err;
    first = sub.out.substr(0, sub.out.find_first_of(";\n"));
  }
};

// Crashes the trainer of `setup` (a Python traceback), waits for its task to be gone, runs one
// cycle and returns the id of the one run that cycle resubmitted; "" (and a failure) if not.
std::string crash_and_restart(DeadRunSetup& setup) {
  write_file(setup.work + "/crash", "traceback\n");
  if (!eventually([&] { return queued(setup.c, "itest-train").empty(); })) {
    ADD_FAILURE() << "the crashed run is still queued";
    return "";
  }
  auto run = llmwatch(setup.config, {"run", "--once"});
  EXPECT_TRUE(run.ok()) << run.err;
  auto again = queued(setup.c, "itest-train");
  if (again.size() != 1) {
    ADD_FAILURE() << again.size() << " runs queued after the restart\n"
                  << llmwatch(setup.config, {"events"}).out;
    return "";
  }
  return std::to_string(again[0]["job_id"].get<long long>());
}

TEST(Restart, DeadRunIsResubmittedExcludingADrainedNode) {
  LLMWATCH_REQUIRE_CLUSTER();
  DeadRunSetup setup([](const std::string& work) {
    return std::vector<std::string>{"--export=ALL,FAKE_STEP_TIME=0.3,FAKE_TRAINER_DIR=" + work,
                                    source_dir() + "/examples/fake-trainer.sh"};
  });
  ASSERT_TRUE(setup.c.error.empty()) << setup.c.error;
  LocalCluster& c = setup.c;
  const std::string &config = setup.config, &first = setup.first;
  // llmwatch sees it running (and remembers how it was submitted).
  ASSERT_TRUE(trains_to(config, 2));
  // An administrator drains node-3; then the run dies with no successor (a Python error: a
  // person's scancel would be a decision, never restarted).
  ASSERT_TRUE(
      c.slurm({"scontrol", "update", "nodename=node-3", "state=drain", "reason=itest"}).ok());
  const std::string second = crash_and_restart(setup);
  ASSERT_FALSE(second.empty()) << llmwatch(config, {"status"}).out;
  EXPECT_NE(second, first);
  auto show = c.slurm({"scontrol", "show", "job", second});
  EXPECT_NE(show.out.find("ExcNodeList=node-3"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("Command=" + source_dir() + "/examples/fake-trainer.sh"),
            std::string::npos)
      << show.out;
  // Another cycle does not resubmit again: the restart was for that one dead run.
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  EXPECT_EQ(queued(c, "itest-train").size(), 1u);
  // The resubmitted run resumes from the checkpoint and trains on.
  ASSERT_TRUE(trains_to(config, 3, second));
}

// The files under llmwatch's copies of Slurm's scripts (state/scripts), by name.
std::vector<std::string> kept_scripts(LocalCluster& c) {
  std::vector<std::string> out;
  std::error_code none;
  for (const auto& f : std::filesystem::recursive_directory_iterator(c.dir / "state/scripts", none))
    if (f.is_regular_file()) out.push_back(f.path().filename().string());
  return out;
}

// A run submitted with `sbatch --wrap` has no script file (Command=(null)): its resubmission
// failed with sbatch's "Unable to open file (null)" (found by bench/crash_latency.py --trainer
// python, 2026-12-02). It is resubmitted from the copy of its script Slurm kept, as llmwatch
// kept it while the task ran.
TEST(Restart, ARunSubmittedWithWrapIsResubmittedFromTheScriptSlurmKept) {
  LLMWATCH_REQUIRE_CLUSTER();
  DeadRunSetup setup([](const std::string& work) {
    return std::vector<std::string>{"--wrap", "FAKE_STEP_TIME=0.3 FAKE_TRAINER_DIR=" + work +
                                                  " exec " + source_dir() +
                                                  "/examples/fake-trainer.sh"};
  });
  ASSERT_TRUE(setup.c.error.empty()) << setup.c.error;
  LocalCluster& c = setup.c;
  const std::string &work = setup.work, &config = setup.config, &first = setup.first;
  ASSERT_TRUE(trains_to(config, 2));
  const std::string second = crash_and_restart(setup);
  ASSERT_FALSE(second.empty());
  auto show = c.slurm({"scontrol", "show", "job", second});
  EXPECT_NE(show.out.find("Command=" + (c.dir / "state") + "/scripts/kept/" + first + "-"),
            std::string::npos)
      << show.out;
  // sbatch sent the script's text to slurmctld: the crashed task's copy (its owner's words) is
  // not kept, one a restart, in llmwatch's state; only the running task's is.
  EXPECT_EQ(kept_scripts(c), std::vector<std::string>{}) << "before the new task is seen";
  // The resubmitted run resumes from the checkpoint and trains on, in a log of its own: the
  // crashed run's stays as it was (its log's pattern, out-%j, not scontrol's expanded name).
  ASSERT_TRUE(trains_to(config, 3, second));
  EXPECT_NE(read_file(work + "/train-" + first + ".out").find("Traceback"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(work + "/train-" + second + ".out"));
  // The resubmitted run names the removed copy: it has no script file either, and its own
  // crash is restarted from the copy kept while it ran.
  ASSERT_EQ(kept_scripts(c).size(), 1u);
  EXPECT_EQ(kept_scripts(c)[0].rfind(second + "-", 0), 0u) << kept_scripts(c)[0];
  const std::string third = crash_and_restart(setup);
  ASSERT_FALSE(third.empty());
  EXPECT_NE(third, second);
  EXPECT_EQ(kept_scripts(c), std::vector<std::string>{});
}

// A --wrap run whose crash is looked at only after slurmctld forgot it (MinJobAge: a restarted
// daemon, a self job that ran late, a restart that waited): Slurm's copy of its script is gone
// with it, and the restart failed ("Slurm's copy of it cannot be had") until the run waited for
// a person. llmwatch keeps the copy from the cycle that first saw the task run.
TEST(Restart, AWrapRunSlurmHasForgottenIsResubmittedFromTheCopyKeptWhenItRan) {
  LLMWATCH_REQUIRE_CLUSTER();
  DeadRunSetup setup(
      [](const std::string& work) {
        return std::vector<std::string>{"--wrap", "FAKE_STEP_TIME=0.3 FAKE_TRAINER_DIR=" + work +
                                                      " exec " + source_dir() +
                                                      "/examples/fake-trainer.sh"};
      },
      {{"LLMWATCH_CLUSTER_MIN_JOB_AGE", "2"}});
  ASSERT_TRUE(setup.c.error.empty()) << setup.c.error;
  LocalCluster& c = setup.c;
  const std::string &config = setup.config, &first = setup.first;
  ASSERT_TRUE(trains_to(config, 2));
  write_file(setup.work + "/crash", "traceback\n");
  ASSERT_TRUE(eventually([&] {
    return queued(c, "itest-train").empty() && !c.slurm({"scontrol", "show", "job", first}).ok();
  }));
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  auto again = queued(c, "itest-train");
  ASSERT_EQ(again.size(), 1u) << llmwatch(config, {"events"}).out;
  const std::string second = std::to_string(again[0]["job_id"].get<long long>());
  EXPECT_NE(second, first);
  ASSERT_TRUE(trains_to(config, 3, second));
  // Once resubmitted, the copy is not kept: sbatch sent its text to slurmctld.
  for (const auto& f : kept_scripts(c)) EXPECT_NE(f.rfind(first + "-", 0), 0u) << f;
}

// A run that logs to one file (`--output=train.out`, no %j) is resubmitted to that file: the
// restarted run used to truncate it (Slurm's default open mode), and with it the crashed run's
// traceback, the evidence its post-mortem named. The new run's lines now follow the old ones.
TEST(Restart, ARunLoggingToOneFileKeepsTheCrashInItsLogAfterTheRestart) {
  LLMWATCH_REQUIRE_CLUSTER();
  DeadRunSetup setup([](const std::string& work) {
    return std::vector<std::string>{"--output=" + work + "/train.out",
                                    "--export=ALL,FAKE_STEP_TIME=0.3,FAKE_TRAINER_DIR=" + work,
                                    source_dir() + "/examples/fake-trainer.sh"};
  });
  ASSERT_TRUE(setup.c.error.empty()) << setup.c.error;
  const std::string &work = setup.work, &config = setup.config;
  ASSERT_TRUE(trains_to(config, 2));
  const std::string second = crash_and_restart(setup);
  ASSERT_FALSE(second.empty());
  ASSERT_TRUE(trains_to(config, 3, second));
  const std::string log = read_file(work + "/train.out");
  const auto traceback = log.find("Traceback");
  EXPECT_NE(traceback, std::string::npos) << log;
  EXPECT_NE(log.find("resumed at step", traceback), std::string::npos) << log;
}

TEST(Restart, CrashLoopStopsAndHoldsTheArray) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config =
      write_config(c, "crash_loop_after = 2\non_absent = [\"alert\", \"restart\"]\n");
  // Every task dies two seconds in, before printing a single step.
  auto sub = c.slurm({"sbatch", "--parsable", "--job-name=itest-train", "--array=1-8%1",
                      "--output=/dev/null", "--wrap",
                      "echo starting; sleep 2; echo 'RuntimeError: CUDA error: unspecified launch "
                      "failure'; exit 1"});
  ASSERT_TRUE(sub.ok()) << sub.err;
  std::string array = sub.out.substr(0, sub.out.find_first_of(";\n"));
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(config, {"run", "--once"});
        return llmwatch(config, {"events"}).out.find("hold done") != std::string::npos;
      },
      90))
      << llmwatch(config, {"events"}).out;
  std::string events = llmwatch(config, {"events"}).out;
  EXPECT_NE(events.find("job:itest-train/crash-loop"), std::string::npos) << events;
  // The remaining tasks are held and stay pending.
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& j : queued(c, "itest-train"))
          if (j["job_state"] == "PENDING" &&
              std::string(j["state_reason"]).rfind("JobHeld", 0) == 0)
            return true;
        return false;
      },
      30))
      << c.jobs().dump().substr(0, 3000);
  // No restart was attempted while in the loop.
  EXPECT_EQ(events.find("restart done"), std::string::npos) << events;
  // A human releases it: `llmwatch release` is recorded like any action.
  auto release = llmwatch(config, {"release", "itest-train"});
  EXPECT_TRUE(release.ok()) << release.out << release.err;
  EXPECT_NE(llmwatch(config, {"events"}).out.find("release done"), std::string::npos);
}

// A run that dies at the same step after every restart (a bad sample: the trainer resumes from
// its step-10 checkpoint and meets it again at step 14) is restarted crash_loop_after - 1 times,
// then no more: the step compared is the last its log holds, read once the task is gone. The
// second death is the host OOM killer's: a SIGKILL, no crash signature in the log, only
// slurmstepd's oom_kill line. The post-mortem's verdict (out of memory) says it failed. Before,
// that end broke the count, and the loop went unseen.
TEST(Restart, ARunThatDiesAtTheSameStepEveryTimeStopsBeingRestarted) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string work = c.dir / "work";
  std::filesystem::create_directories(work);
  std::string config = write_config(c, "");
  write_file(work + "/bad-step", "14 alternate\n");
  auto sub = c.slurm({"sbatch", "--parsable", "--job-name=itest-train", "--nodes=1",
                      "--chdir=" + work, "--output=" + work + "/train-%j.out",
                      "--export=ALL,FAKE_STEP_TIME=0.5,FAKE_CKPT_EVERY=10,FAKE_TRAINER_DIR=" + work,
                      source_dir() + "/examples/fake-trainer.sh"});
  ASSERT_TRUE(sub.ok()) << sub.err;
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(config, {"run", "--once"});
        return llmwatch(config, {"events"}).out.find("job:itest-train/crash-loop") !=
               std::string::npos;
      },
      120))
      << llmwatch(config, {"events"}).out;
  // The loop's third end is not restarted, in that cycle or any after it.
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  std::string events = llmwatch(config, {"events"}).out;
  size_t restarts = 0;
  for (size_t at = events.find("restart done"); at != std::string::npos;
       at = events.find("restart done", at + 1))
    ++restarts;
  EXPECT_EQ(restarts, 2u) << events;
  EXPECT_NE(events.find("3 runs in a row ended at step 14 without passing it"), std::string::npos)
      << events;
  EXPECT_TRUE(queued(c, "itest-train").empty()) << c.jobs().dump().substr(0, 3000);
}

// A run whose launch fails (#30, lose less per interruption): the first node it lands on fails
// its prolog, so Slurm drains that node and holds the run ("launch failed requeued held") until
// someone releases it. llmwatch releases it once, and it starts on another node and trains. A
// second failure within the hour is only told: two nodes in a row point at the job, and every
// release would let Slurm drain one more. The credential lifetime is 10 s here (Slurm's 120 s
// default is how long a requeued run waits before it may start again).
TEST(Restart, ARunSlurmHoldsAfterAFailedLaunchIsReleasedOnceAndStartsElsewhere) {
  LLMWATCH_REQUIRE_CLUSTER();
  TempDir prolog_dir;
  const std::string marker = prolog_dir / "fail-next-launch";
  const std::string prolog = prolog_dir / "prolog.sh";
  write_file(prolog, "#!/bin/sh\n# The first launch that finds the marker fails.\nrm \"" + marker +
                         "\" 2>/dev/null && exit 1\nexit 0\n");
  std::filesystem::permissions(prolog, std::filesystem::perms::owner_all);
  write_file(marker, "");
  LocalCluster c(3, {{"LLMWATCH_CLUSTER_PROLOG", prolog}, {"LLMWATCH_CLUSTER_CRED_EXPIRE", "10"}});
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string work = c.dir / "work";
  std::filesystem::create_directories(work);
  std::string config = write_config(c, "");  // the default on_launch_failed
  auto sub = c.slurm({"sbatch", "--parsable", "--job-name=itest-train", "--nodes=1",
                      "--chdir=" + work, "--output=" + work + "/train-%j.out",
                      "--export=ALL,FAKE_STEP_TIME=0.3,FAKE_TRAINER_DIR=" + work,
                      source_dir() + "/examples/fake-trainer.sh"});
  ASSERT_TRUE(sub.ok()) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find_first_of(";\n"));
  auto held = [&] {
    for (const auto& j : queued(c, "itest-train"))
      if (j.value("state_description", "") == "launch failed requeued held") return true;
    return false;
  };
  ASSERT_TRUE(eventually(held, 30)) << c.jobs().dump().substr(0, 3000);
  auto drained = c.slurm({"sinfo", "-h", "-N", "-t", "drain", "-o", "%N %E"}).out;
  const std::string bad = drained.substr(0, drained.find(' '));
  ASSERT_NE(drained.find("Prolog error"), std::string::npos) << drained;
  // The ledger holds another node with two incidents (#30): the node Slurm would pick next.
  // Before, the release let the run start there; now the run is kept off it first.
  const std::string suspect = bad == "node-1" ? "node-2" : "node-1";
  {
    Store store(c.dir / "state");
    for (int i = 0; i < 2; ++i)
      store.add_incident(unix_now() - 600 + i, suspect, "90@" + std::to_string(i),
                         "itest-train crashed, attributed to " + suspect);
  }
  // One cycle names the node and releases the run; it starts elsewhere and trains.
  auto run = llmwatch(config, {"run", "--once"});
  ASSERT_TRUE(run.ok()) << run.err;
  std::string events = llmwatch(config, {"events"}).out;
  EXPECT_NE(events.find("relaunch done: released " + id), std::string::npos) << events;
  EXPECT_NE(events.find("launch failed on " + bad), std::string::npos) << events;
  const std::string kept_off = compress_hostlist({bad, suspect});
  EXPECT_NE(c.slurm({"scontrol", "show", "job", id}).out.find("ExcNodeList=" + kept_off),
            std::string::npos)
      << events;
  ASSERT_TRUE(trains_to(config, 2, id))
      << c.jobs().dump().substr(0, 3000) << llmwatch(config, {"events"}).out;
  auto show = c.slurm({"scontrol", "show", "job", id});
  EXPECT_EQ(show.out.find(" NodeList=" + bad + "\n"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find(" NodeList=" + suspect + "\n"), std::string::npos) << show.out;
  // Requeued, it fails to launch again: told, not released.
  write_file(marker, "");
  ASSERT_TRUE(c.slurm({"scontrol", "requeue", id}).ok());
  ASSERT_TRUE(eventually(held, 60)) << c.jobs().dump().substr(0, 3000);
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  events = llmwatch(config, {"events"}).out;
  EXPECT_NE(events.find("failed again"), std::string::npos) << events;
  std::size_t releases = 0;
  for (auto at = events.find("relaunch done"); at != std::string::npos;
       at = events.find("relaunch done", at + 1))
    ++releases;
  EXPECT_EQ(releases, 1u) << events;
  EXPECT_TRUE(held()) << "a person decides now";
}

}  // namespace
}  // namespace llmwatch::testing

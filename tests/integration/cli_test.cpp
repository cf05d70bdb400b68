// The command line as a user meets it: exit codes, file:line errors, inspect output.
#include "local_cluster.h"
#include "probes/gpu/gpu_telemetry.h"
#include "store/store.h"

namespace llmwatch::testing {
namespace {

ProcessResult cli(std::vector<std::string> args) {
  ProcessSpec spec;
  spec.argv = {llmwatch_bin()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(30);
  return run_process(spec);
}

TEST(Cli, VersionAndHelpDocumentExitCodes) {
  auto v = cli({"--version"});
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.out.rfind("llmwatch ", 0), 0u);
  auto h = cli({"--help"});
  EXPECT_TRUE(h.ok());
  EXPECT_NE(h.out.find("Exit codes"), std::string::npos);
  EXPECT_EQ(cli({"no-such-command"}).exit_code, 2);
  EXPECT_EQ(cli({"run"}).exit_code, 2);  // --once is required
}

// `stacks --rank` alone, or `--by-task` without `--rank`, ran a full stack dump of every process
// of the job, the option ignored without a word; now each is a usage error that names what it
// needs.
TEST(Cli, StacksRankOptionsNeedWhatTheyQualify) {
  auto alone = cli({"stacks", "--job", "1", "--rank", "3"});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--rank requires --ranks"), std::string::npos) << alone.err;
  auto by_task = cli({"stacks", "--job", "1", "--ranks", "--by-task"});
  EXPECT_EQ(by_task.exit_code, 2);
  EXPECT_NE(by_task.err.find("--by-task requires --rank"), std::string::npos) << by_task.err;
  auto every = cli({"stacks", "--job", "1", "--every-rank"});
  EXPECT_EQ(every.exit_code, 2);
  EXPECT_NE(every.err.find("--every-rank requires --ranks"), std::string::npos) << every.err;
  auto both = cli({"stacks", "--job", "1", "--ranks", "--every-rank", "--rank", "3"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  auto stacks_alone = cli({"stacks", "--job", "1", "--with-stacks"});
  EXPECT_EQ(stacks_alone.exit_code, 2);
  EXPECT_NE(stacks_alone.err.find("--with-stacks requires --ranks"), std::string::npos)
      << stacks_alone.err;
  auto with_stacks =
      cli({"stacks", "--job", "67108863", "--ranks", "--every-rank", "--with-stacks"});
  EXPECT_TRUE(with_stacks.ok()) << with_stacks.err;
  EXPECT_NE(with_stacks.out.find(" processes=0 ==="), std::string::npos) << with_stacks.out;
  auto every_here = cli({"stacks", "--job", "67108863", "--ranks", "--every-rank"});
  EXPECT_TRUE(every_here.ok()) << every_here.err;
  EXPECT_NE(every_here.out.find(" processes=0 ==="), std::string::npos) << every_here.out;
  // Together: which ranks run here (none: Slurm's largest job id, which no test reaches, has no
  // process on this machine).
  auto whole = cli({"stacks", "--job", "67108863", "--ranks", "--rank", "3", "--by-task"});
  EXPECT_TRUE(whole.ok()) << whole.err;
  EXPECT_NE(whole.out.find("=== llmwatch-ranks node="), std::string::npos) << whole.out;
  EXPECT_NE(whole.out.find(" processes=0 ==="), std::string::npos) << whole.out;
}

// #30: a rank aborted (as PyTorch's watchdog aborts one) with core dumps on, its core still
// being written. gdb cannot stop it: here, attached to a process writing a 6 GiB core, it waited
// the whole 18 s of the dump and then said "Unable to attach", so the look's gdb ran to its 8 s
// timeout and saw no exit, and the dump's to its 20 s. Now /proc says it (CoreDumping: 1), the
// look and the dump print it at once and attach nothing. A 1 GiB core here takes ~3 s to write;
// the commands run right after it is seen begun (no slurmd here: the process is the job's by
// SLURM_JOB_ID in its environment).
TEST(Cli, StacksSeeARankDumpingCoreAndDoNotAttachToIt) {
  const std::string pattern = read_file("/proc/sys/kernel/core_pattern");
  if (pattern.empty() || pattern[0] == '|' || pattern[0] == '/')
    GTEST_SKIP() << "core_pattern is not a file in the process's directory: " << pattern;
  TempDir dir;
  const std::string job = "67108862";
  BackgroundProcess rank(
      {"env", "SLURM_JOB_ID=" + job, "SLURM_PROCID=0", "SLURM_NTASKS=1", "python3", "-c",
       "import os, resource, sys\n"
       "try:\n"
       "    resource.setrlimit(resource.RLIMIT_CORE, (1 << 31, resource.RLIM_INFINITY))\n"
       "except (ValueError, OSError):\n"
       "    sys.exit(3)\n"
       "os.chdir('" +
           dir.path +
           "')\n"
           "memory = bytearray(1 << 30)\n"
           "for page in range(0, len(memory), 4096):\n"
           "    memory[page] = 1\n"
           "os.abort()\n"},
      dir / "rank.log");
  const std::string status = "/proc/" + std::to_string(rank.pid) + "/status";
  bool dumping = eventually(
      [&] {
        return read_file(status).find("CoreDumping:\t1") != std::string::npos ||
               !std::filesystem::exists(status);
      },
      60);
  ASSERT_TRUE(dumping);
  if (read_file(status).find("CoreDumping:\t1") == std::string::npos) {
    const int rc = rank.wait_exit(10);
    if (rc == 3) GTEST_SKIP() << "the core size limit cannot be raised here";
    FAIL() << "ended (" << rc << ") without a core dump seen: " << read_file(dir / "rank.log");
  }
  const auto look = cli({"stacks", "--job", job, "--ranks", "--every-rank"});
  const auto dump = cli({"stacks", "--job", job});
  EXPECT_TRUE(look.ok()) << look.err;
  EXPECT_NE(
      look.out.find("pid=" + std::to_string(rank.pid) + " ppid=" + std::to_string(::getpid()) +
                    " rank=0 world=1 by=SLURM_PROCID exiting=do_coredump\n"),
      std::string::npos)
      << look.out;
  EXPECT_NE(dump.out.find("not dumped: the process is exiting in the kernel (do_coredump)\n"),
            std::string::npos)
      << dump.out;
  EXPECT_EQ(rank.wait_exit(120), 128 + SIGABRT);
}

// The defect: --help promised exit 3 for `status --check`, and the flag did not exist. It is
// Nagios now: on a state nobody ever cycled, "not supervising" is UNKNOWN (3).
TEST(Cli, StatusCheckIsANagiosPlugin) {
  TempDir dir;
  write_file(dir / "c.toml", "[llmwatch]\nstate_dir = \"" + dir / "state" + "\"\n");
  auto r = cli({"--config", dir / "c.toml", "status", "--check"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.out, "LLMWATCH UNKNOWN - not supervising: no cycle has run\n");
}

TEST(Cli, ConfigCheckPrintsFileLineAndExits2) {
  TempDir dir;
  write_file(dir / "bad.toml", "[llmwatch]\nintervall = \"5m\"\n");
  auto r = cli({"config", "check", dir / "bad.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, dir / "bad.toml" +
                       ":2: unknown key 'intervall' in [llmwatch]; did you mean 'interval'?\n");
  auto ok = cli({"config", "check", source_dir() + "/conf/llmwatch.toml"});
  EXPECT_TRUE(ok.ok()) << ok.err;
  // Every other command refuses to run on a bad config, with the same message.
  auto run = cli({"--config", dir / "bad.toml", "run", "--once"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find(":2: unknown key"), std::string::npos);
}

TEST(Cli, InspectTrainingLogPrintsStepsAndDerivedFigures) {
  auto r = cli({"inspect", "training-log", fixture("training-logs/nemo2-llama3-8b.log"),
                "--seq-length", "8192", "--gpus", "8", "--gpu", "H100", "--precision", "fp8",
                "--model-flops", "4.74e14"});
  ASSERT_TRUE(r.ok()) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"].size(), 7u);  // 5 step lines, the load and the save line
  EXPECT_EQ(j["steps"][1]["step"], 45);
  EXPECT_NEAR(j["summary"]["tokens_per_s"].get<double>(), 84562, 1);  // median step time 12.40 s
  EXPECT_NEAR(j["summary"]["mfu"].get<double>() * 100, 30.9, 0.05);
  EXPECT_DOUBLE_EQ(j["summary"]["save_s"].get<double>(), 4.389);
}

TEST(Cli, InspectRejectsGarbageWithWhereItCameFrom) {
  TempDir dir;
  write_file(dir / "q.json",
             "squeue: error: slurm_load_jobs error: Unable to contact slurm controller\n");
  auto r = cli({"inspect", "squeue-json", dir / "q.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir / "q.json"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"inspect", "nonsense", dir / "q.json"}).exit_code, 2);
}

// The same answer from every command (#27): an unknown name is an error (events --job nosuch
// printed nothing and exited 0), nothing to show says so, and a missing file says why.
TEST(Cli, UnknownNamesAreErrorsAndEmptyListsSaySo) {
  TempDir dir;
  write_file(dir / "c.toml", "[llmwatch]\nstate_dir = \"" + dir / "state" +
                                 "\"\n[[job]]\nname = \"mytrain\"\n" + job_owner());
  auto unknown = cli({"--config", dir / "c.toml", "events", "--job", "nosuch"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_EQ(unknown.err, "llmwatch events: 'nosuch' is not a [[job]] in " + dir / "c.toml" + "\n");
  // A likely typo is named (#27: `job mytrian` printed an empty view of a job never seen).
  auto typo = cli({"--config", dir / "c.toml", "job", "mytrian"});
  EXPECT_EQ(typo.exit_code, 2) << typo.out;
  EXPECT_EQ(typo.err, "llmwatch job: 'mytrian' is not a [[job]] in " + dir / "c.toml" +
                          "; did you mean 'mytrain'?\n");
  auto none = cli({"--config", dir / "c.toml", "events", "--job", "mytrain", "--since", "1h"});
  EXPECT_TRUE(none.ok()) << none.err;
  EXPECT_EQ(none.out.rfind("no events of mytrain since ", 0), 0u) << none.out;
  auto missing = cli({"--config", dir / "missing.toml", "status"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
}

// `nodes NODE` shows, under its health history, what the node's GPUs did at its last node-check
// under a watched task (the samples a slow-node finding cites), and --json gives every kept
// sample. A reason as the GPU's own tool printed it reaches the terminal made safe.
TEST(Cli, ANodesViewShowsItsGpusAtItsLastNodeCheck) {
  TempDir dir;
  write_file(dir / "c.toml", "[llmwatch]\nstate_dir = \"" + dir / "state" + "\"\n");
  {
    Store store(dir / "state");
    store.put_node_health("node-3", {Verdict::Ok, "2 GPUs"}, 1000);
    for (double ts : {1000.0, 1060.0}) {
      GpuTelemetry held;
      held.gpu = 2;
      held.sm_mhz = ts == 1000 ? 1980 : 1095;
      held.sm_max_mhz = 1980;
      held.reasons = {"HW Slowdown\x1b[2J"};
      GpuTelemetry fine = held;
      fine.gpu = 0;
      fine.sm_mhz = 1980;
      fine.reasons = {};
      store.add_telemetry_sample("node-3", {ts, {fine, held}});
    }
  }
  auto text = cli({"--config", dir / "c.toml", "nodes", "node-3"});
  ASSERT_TRUE(text.ok()) << text.err;
  EXPECT_NE(text.out.find("GPUs at its last node-check under a watched task"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("2 samples kept"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GPU 2: HW Slowdown"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1095/1980 MHz"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << "an escape reached the terminal";
  auto json =
      nlohmann::json::parse(cli({"--config", dir / "c.toml", "nodes", "node-3", "--json"}).out);
  ASSERT_EQ(json["telemetry"].size(), 2u);
  EXPECT_EQ(json["telemetry"][1]["ts"], 1060.0);
  EXPECT_EQ(json["telemetry"][1]["gpus"].size(), 2u);
  auto none = cli({"--config", dir / "c.toml", "nodes", "node-4"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.out.find("GPUs at its last"), std::string::npos) << none.out;
}

// A manual action that did not happen exits non-zero (#27: `save` with no save_switch said
// "skipped" and exited 0).
TEST(Cli, AManualActionThatDidNotHappenFails) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c(1);
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                         "\"\n[[job]]\nname = \"mytrain\"\n" + job_owner());
  auto save = llmwatch(config, {"save", "mytrain"});
  EXPECT_EQ(save.exit_code, 1) << save.out << save.err;
  EXPECT_NE(save.out.find("save mytrain: skipped"), std::string::npos) << save.out;
}

}  // namespace
}  // namespace llmwatch::testing

#include "probes/python_stacks.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "test_util.h"

namespace llmwatch {
namespace {

// As gdb with CPython's py-bt helper prints it (captured from a live python3.11 on Debian 12).
const char* kPyBt =
    "Traceback (most recent call first):\n"
    "  <built-in method sleep of module object at remote 0x7f5e4d1c7330>\n"
    "  File \"/work/train.py\", line 4, in allreduce_wait\n"
    "    time.sleep(0.5)\n"
    "  File \"/work/train.py\", line 6, in train_step\n"
    "    allreduce_wait()\n";

// As `py-spy dump` prints it.
const char* kPySpy =
    "Process 4242: python3 train.py\n"
    "Python v3.11.2 (/usr/bin/python3.11)\n\n"
    "Thread 4242 (idle): \"MainThread\"\n"
    "    __next__ (torch/utils/data/dataloader.py:631)\n"
    "    train_step (train.py:6)\n";

TEST(PythonStacks, TheInnermostFrameOfEitherTool) {
  EXPECT_EQ(innermost_frame(kPyBt), "allreduce_wait (train.py:4)");
  EXPECT_EQ(innermost_frame(kPySpy), "__next__ (dataloader.py:631)");
  EXPECT_EQ(innermost_frame("gdb: ptrace: Operation not permitted.\n"), "");
}

// The ranks grouped by where they wait, largest group first; the odd one out says where it is.
TEST(PythonStacks, TheOddOneOutStandsOut) {
  std::vector<ProcessStack> stacks;
  for (int i = 0; i < 3; ++i) stacks.push_back({"node-1", 100 + i, "python3", kPyBt, ""});
  stacks.push_back({"node-2", 77, "python3", kPySpy, ""});
  auto parsed = parse_stacks(format_stacks(stacks));
  ASSERT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed[3].node, "node-2");
  EXPECT_EQ(parsed[3].pid, 77);
  EXPECT_EQ(summarize_stacks(parsed),
            "4 processes: 3 in allreduce_wait (train.py:4); 1 in __next__ (dataloader.py:631) "
            "[node-2 pid 77]");
  EXPECT_EQ(summarize_stacks({}), "no Python process found");
}

// A dump that marks its ranks groups theirs alone and counts the rest: 8 ranks with 8 DataLoader
// workers each made the workers the largest group, and one node's torchrun agent stood alone
// as if it were the odd one out. On the code before: "11 processes: 7 in __next__ ...; 3 in
// allreduce_wait ...; 1 in _invoke_run (api.py:866) [node-1 pid 90]": the rank in __next__ lost
// among the workers, and the agent named as the odd one out.
TEST(PythonStacks, TheSummaryGroupsTheRanksAndCountsTheRest) {
  const std::string agent =
      "Traceback (most recent call first):\n  File \"/t/elastic/agent/server/api.py\", line 866, "
      "in _invoke_run\n";
  std::vector<ProcessStack> stacks = {{"node-1", 90, "pt_elastic", agent, "", "other"}};
  for (int i = 0; i < 3; ++i) stacks.push_back({"node-1", 100 + i, "python3", kPyBt, "", "rank"});
  stacks.push_back({"node-2", 77, "python3", kPySpy, "", "rank"});
  for (int i = 0; i < 6; ++i)
    stacks.push_back({"node-1", 200 + i, "pt_data_worker", kPySpy, "", "worker"});
  EXPECT_EQ(summarize_stacks(parse_stacks(format_stacks(stacks))),
            "4 processes: 3 in allreduce_wait (train.py:4); 1 in __next__ (dataloader.py:631) "
            "[node-2 pid 77]; besides the ranks, 6 workers and 1 process of no rank");
  stacks.erase(stacks.begin());
  EXPECT_EQ(summarize_stacks(parse_stacks(format_stacks(stacks))),
            "4 processes: 3 in allreduce_wait (train.py:4); 1 in __next__ (dataloader.py:631) "
            "[node-2 pid 77]; besides the ranks, 6 workers");
  // Unmarked (a dump from before the marks): every process grouped, as before.
  for (auto& s : stacks) s.role = "";
  EXPECT_EQ(summarize_stacks(parse_stacks(format_stacks(stacks))),
            "10 processes: 7 in __next__ (dataloader.py:631); 3 in allreduce_wait (train.py:4)");
}

// A node where `llmwatch stacks` found no Python process of the job answers with a header of
// pid 0. The defect (seen in the chaos soak, whose trainer is a shell loop): the dump said
// "1 process: 1 in no Python stack [node-4 pid 0]", a process that does not exist. It says
// which nodes had none, beside the processes that were found.
TEST(PythonStacks, ANodeWithNoPythonProcessIsSaidSo) {
  std::string none_on_4 =
      "=== llmwatch-stack node=node-4 pid=0 comm=none ===\nno Python process of job 9 on node-4\n";
  EXPECT_EQ(summarize_stacks(parse_stacks(none_on_4)), "no Python process found on node-4");
  std::vector<ProcessStack> found = {{"node-1", 100, "python3", kPyBt, ""},
                                     {"node-1", 101, "python3", kPyBt, ""}};
  EXPECT_EQ(summarize_stacks(parse_stacks(format_stacks(found) + none_on_4)),
            "2 processes: 2 in allreduce_wait (train.py:4); no Python process on node-4");
}

// Confirmation: ranks stuck in a collective show the same frames twice; a moving run does not.
TEST(PythonStacks, StacksThatMoveDisproveAHang) {
  std::vector<ProcessStack> hung = {{"node-1", 100, "python3", kPyBt, ""},
                                    {"node-2", 77, "python3", kPySpy, ""}};
  EXPECT_EQ(python_frames(kPyBt),
            (std::vector<std::string>{"allreduce_wait (train.py:4)", "train_step (train.py:6)"}));
  EXPECT_FALSE(stacks_moved(hung, hung));
  auto later = hung;
  later[1].text = "Thread 4242 (idle): \"MainThread\"\n    train_step (train.py:7)\n";
  EXPECT_TRUE(stacks_moved(hung, later));  // other frames
  auto fewer = hung;
  fewer.pop_back();
  EXPECT_FALSE(stacks_moved(hung, fewer));  // a rank gone proves nothing
  auto more = hung;
  more.push_back({"node-2", 78, "python3", kPySpy, ""});
  // A process one dump missed is unknown, not movement (#26.9: an srun that missed a node
  // "disproved" a real hang).
  EXPECT_FALSE(stacks_moved(hung, more));
  EXPECT_FALSE(stacks_moved(fewer, hung));
  // A background thread that ticks (a logger, a heartbeat) is not the training moving.
  auto ticking = hung;
  ticking[1].text = std::string(kPySpy) +
                    "\nThread 4250 (idle): \"wandb-heartbeat\"\n    wait (threading.py:324)\n";
  auto ticked = hung;
  ticked[1].text = std::string(kPySpy) +
                   "\nThread 4250 (active): \"wandb-heartbeat\"\n    send (socket.py:77)\n";
  EXPECT_FALSE(stacks_moved(ticking, ticked));
  auto unreadable = hung;
  unreadable[0].text = "gdb: ptrace: Operation not permitted.\n";
  EXPECT_FALSE(stacks_moved(hung, unreadable));  // no frames is no evidence either way
}

// torchrun's elastic agent is the job's Python too (since stop 82 it is listed: PyTorch names
// it pt_elastic), and its main thread loops in its monitor, sleeping, polling its workers and the
// rendezvous, whatever they do: its frames moving is no sign that the ranks step. A dump marks
// what each process is to its node's ranks, and only the ranks' and their workers' count. On
// the code before, a hung run whose agent was caught polling was a near miss.
TEST(PythonStacks, ALaunchersFramesNeitherConfirmNorDisproveAHang) {
  const std::string sleeping =
      "Traceback (most recent call first):\n"
      "  <built-in method sleep of module object at remote 0x7f5e4d1c7330>\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py\", "
      "line 866, in _invoke_run\n";
  const std::string polling =
      "Traceback (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py\", "
      "line 869, in _invoke_run\n";
  std::vector<ProcessStack> hung = {{"node-1", 90, "pt_elastic", sleeping, "", "other"},
                                    {"node-1", 100, "python3", kPyBt, "", "rank"},
                                    {"node-1", 110, "pt_data_worker", kPySpy, "", "worker"}};
  auto later = hung;
  later[0].text = polling;
  EXPECT_FALSE(stacks_moved(hung, later));
  // Read back from what `llmwatch stacks` prints, the same.
  EXPECT_EQ(parse_stacks(format_stacks(hung))[0].role, "other");
  EXPECT_FALSE(stacks_moved(parse_stacks(format_stacks(hung)), parse_stacks(format_stacks(later))));
  // A rank's frames, or its worker's, still disprove it.
  auto rank_moved = later;
  rank_moved[1].text = polling;
  EXPECT_TRUE(stacks_moved(hung, rank_moved));
  auto worker_moved = later;
  worker_moved[2].text = "Thread 4242 (idle): \"MainThread\"\n    _worker_loop (worker.py:309)\n";
  EXPECT_TRUE(stacks_moved(hung, worker_moved));
  // The agent alone with frames is no dump that can confirm a hang.
  auto agent_only = hung;
  agent_only[1].text = agent_only[2].text = "gdb: ptrace: Operation not permitted.\n";
  EXPECT_FALSE(shows_training_frames(agent_only));
  EXPECT_TRUE(shows_training_frames(hung));
  // A dump that marks no process a rank (one from before the marks, a launcher of the job's own
  // and no rank named) counts every process, as before.
  auto unmarked = hung, unmarked_later = later;
  for (auto* d : {&unmarked, &unmarked_later})
    for (auto& s : *d) s.role = "";
  EXPECT_TRUE(stacks_moved(unmarked, unmarked_later));
  EXPECT_TRUE(shows_training_frames({agent_only[0]}));
}

// Property: over random pairs of dumps whose ranks are marked, whatever the processes marked
// "other" show (frames that move, none, one dump only), the verdicts are those of the dumps
// without them; and stacks read back from what `llmwatch stacks` prints judge the same.
TEST(PythonStacks, ProcessesOfNoRankNeverChangeTheVerdict) {
  std::mt19937 rng(82);
  const std::vector<std::string> frames = {
      kPyBt, "Traceback (most recent call first):\n  File \"/w/train.py\", line 9, in step\n",
      "Thread 1 (idle): \"MainThread\"\n    wait (agent.py:3)\n", "no Python stack\n"};
  const std::vector<std::string> roles = {"rank", "worker", "other"};
  int moved = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<ProcessStack> before, after, before_ranks, after_ranks;
    for (int pid = 1; pid <= 1 + static_cast<int>(rng() % 5); ++pid) {
      ProcessStack s{"node-" + std::to_string(1 + rng() % 2), pid, "python3",
                     frames[rng() % frames.size()],           "",  roles[rng() % roles.size()]};
      if (pid == 1) s.role = "rank";  // the dumps mark a rank
      ProcessStack t = s;
      t.text = frames[rng() % frames.size()];
      const bool in_before = rng() % 4 != 0, in_after = rng() % 4 != 0 || pid == 1;
      if (in_before || pid == 1) before.push_back(s);
      if (in_after) after.push_back(t);
      if (s.role != "other") {
        if (in_before || pid == 1) before_ranks.push_back(s);
        if (in_after) after_ranks.push_back(t);
      }
    }
    const bool verdict = stacks_moved(before, after);
    moved += verdict;
    EXPECT_EQ(verdict, stacks_moved(before_ranks, after_ranks));
    EXPECT_EQ(shows_training_frames(after), shows_training_frames(after_ranks));
    EXPECT_EQ(verdict, stacks_moved(parse_stacks(format_stacks(before)),
                                    parse_stacks(format_stacks(after))));
  }
  EXPECT_GT(moved, 100);  // the property was put to the test both ways
  EXPECT_LT(moved, 1900);
}

// `scontrol listpids 2 node-1` as Slurm 22.05 prints it (captured on the local cluster): the
// batch step's processes, children included, and an srun step's.
TEST(PythonStacks, SlurmdListsTheJobsProcesses) {
  auto pids = parse_listpids(
      "PID      JOBID    STEPID   LOCALID GLOBALID\n"
      "2032     2        0        0       0       \n"
      "1974     2        batch    0       0       \n"
      "2016     2        batch    -       -       \n");
  ASSERT_TRUE(pids.has_value());
  EXPECT_EQ(*pids, (std::vector<JobProcess>{{2032, "0"}, {1974, "batch"}, {2016, "batch"}}));
  EXPECT_EQ(parse_listpids("PID      JOBID    STEPID   LOCALID GLOBALID\n"),
            std::vector<JobProcess>{});
  // Anything else is not a list to trust: the caller falls back to the environment.
  EXPECT_FALSE(parse_listpids("slurm_load_jobs error: Invalid job id specified\n"));
  EXPECT_FALSE(parse_listpids("PID JOBID\nx12 2\n"));
  EXPECT_FALSE(parse_listpids("PID      JOBID    STEPID   LOCALID GLOBALID\n2032     2\n"));
  EXPECT_FALSE(parse_listpids("PID      JOBID    STEPID   LOCALID GLOBALID\n-2  2  extern 0 0\n"));
}

// With PrologFlags=contain (an extern step, as pam_slurm_adopt needs), slurmd lists that step's
// own row with pid -1 and no process. On the code before, that row made the whole list
// untrusted: the job's processes were then looked for by their environment, with no step.
TEST(PythonStacks, TheExternStepsRowOfNoProcessIsSkipped) {
  auto listed = parse_listpids(
      "PID      JOBID    STEPID   LOCALID GLOBALID\n"
      "-1       13073    extern   0       0       \n"
      "3913206  13073    extern   -       -       \n"
      "3913212  13073    batch    0       0       \n"
      "3913230  13073    0        0       0       \n");
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(*listed,
            (std::vector<JobProcess>{{3913206, "extern"}, {3913212, "batch"}, {3913230, "0"}}));
  EXPECT_FALSE(parse_listpids(""));
}

// A stand-in rank: a process (sleep, or a copy of it at `program`; or `argv`) whose environment
// names its flight-recorder pipe, as torchrun's worker's would. Killed and reaped at the end.
struct FakeRank {
  pid_t pid = -1;
  explicit FakeRank(const std::vector<std::string>& env, std::string program = "/bin/sleep")
      : FakeRank(env, std::vector<std::string>{program, "60"}) {}
  FakeRank(const std::vector<std::string>& env, std::vector<std::string> argv) {
    std::vector<char*> envp, args;
    std::vector<std::string> copy = env;
    for (auto& e : copy) envp.push_back(e.data());
    envp.push_back(nullptr);
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, args.data(), envp.data()), 0);
  }
  ~FakeRank() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// PyTorch renames the main thread, and with it /proc/PID/comm: torchrun's elastic agent to
// "pt_elastic" (torch >= 2.5), DataLoader workers to "pt_data_worker", and, in torch 2.4, every
// process that imports torch to "pt_main_thread". Such a process is still the job's Python: on
// the code before (comm starting "python"), it was not listed, so a hang's dump found no rank
// under torch 2.4 and the look never saw a torchrun agent.
TEST(PythonStacks, AProcessPyTorchRenamedIsStillTheJobsPython) {
  const std::string job = "9" + std::to_string(::getpid());  // a job id no slurmd knows
  const std::vector<std::string> env = {"SLURM_JOB_ID=" + job};
  FakeRank renamed(env, std::vector<std::string>{"/usr/bin/python3", "-c",
                                                 "import ctypes, time\n"
                                                 "ctypes.CDLL(None).prctl(15, b'pt_elastic', 0, "
                                                 "0, 0)\n"
                                                 "time.sleep(60)\n"});
  FakeRank plain(env,
                 std::vector<std::string>{"/usr/bin/python3", "-c", "import time; time.sleep(60)"});
  FakeRank other(env);  // the job's, but no Python
  EXPECT_TRUE(testing::eventually([&] { return process_comm(renamed.pid) == "pt_elastic"; }, 20));
  std::vector<int> found;
  for (const auto& p : job_python_processes(job, "")) {
    found.push_back(p.pid);
    EXPECT_EQ(p.step, "");  // no slurmd: by the environment
  }
  EXPECT_EQ(found,
            (std::vector<int>{std::min(renamed.pid, plain.pid), std::max(renamed.pid, plain.pid)}));
  EXPECT_EQ(std::count(found.begin(), found.end(), other.pid), 0);
}

TEST(FlightRecorder, ARanksPipeIsPokedOnlyWhereItIsItsOwnFifo) {
  testing::TempDir dir;
  std::string stem = dir / "fr_pipe_";
  ASSERT_EQ(::mkfifo((stem + "3.pipe").c_str(), 0600), 0);
  // The rank's watchdog: a reader on the FIFO.
  int reader = ::open((stem + "3.pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  FakeRank rank({"RANK=3", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=" + stem,
                 "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=" + (dir / "fr_dump_")});
  std::string note;
  ASSERT_TRUE(testing::eventually([&] {
    note = trigger_flight_recorder(rank.pid);  // the child's environ is there once it execs
    return note.find("rank 3") != std::string::npos;
  })) << note;
  EXPECT_EQ(note, "flight recorder: rank 3 asked to dump to " + (dir / "fr_dump_3"));
  char buf[8] = {};
  EXPECT_GT(::read(reader, buf, sizeof buf), 0);  // the watchdog was asked
  ::close(reader);

  // No reader (the watchdog is gone): says so at once, never blocks.
  note = trigger_flight_recorder(rank.pid);
  EXPECT_NE(note.find("No such device"), std::string::npos) << note;

  // A regular file (or a link) where the pipe should be is not written to.
  testing::write_file(stem + "4.pipe", "keep");
  FakeRank other({"SLURM_PROCID=4", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=" + stem});
  ASSERT_TRUE(testing::eventually([&] { return !trigger_flight_recorder(other.pid).empty(); }));
  EXPECT_NE(trigger_flight_recorder(other.pid).find("not touched"), std::string::npos);
  EXPECT_EQ(testing::read_file(stem + "4.pipe"), "keep");

  // Not configured: nothing to say.
  FakeRank plain({"RANK=0"});
  EXPECT_EQ(trigger_flight_recorder(plain.pid), "");
}

// The flight recorder is wired into what `llmwatch stacks` takes of each rank (#26.10: it was
// defined, and told of in the README, but never called): fired first, and said in the block.
TEST(FlightRecorder, EachRanksForensicsFireItBeforeTheStack) {
  testing::TempDir dir;
  std::string stem = dir / "fr_pipe_";
  ASSERT_EQ(::mkfifo((stem + "2.pipe").c_str(), 0600), 0);
  int reader = ::open((stem + "2.pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  FakeRank rank({"RANK=2", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=" + stem,
                 "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=" + (dir / "fr_dump_")});
  ASSERT_TRUE(testing::eventually([&] {
    return std::filesystem::exists("/proc/" + std::to_string(rank.pid) + "/environ") &&
           !trigger_flight_recorder(rank.pid).empty();
  }));
  char drain[8];
  while (::read(reader, drain, sizeof drain) > 0) {
  }
  auto block = rank_forensics(rank.pid, Seconds(10));
  EXPECT_EQ(block.text.rfind("flight recorder: rank 2 asked to dump to " + (dir / "fr_dump_2"), 0),
            0u)
      << block.text;
  char buf[8] = {};
  EXPECT_GT(::read(reader, buf, sizeof buf), 0);
  ::close(reader);
}

// A job's own program ships a gdb script beside it (`prog-gdb.py`, as `libx.so-gdb.py` beside a
// library): the dump, run as root on the job's node, must never load it (#26.7: with the
// auto-load safe-path "/" it ran the user's Python as root). The control run with the old
// setting proves that the marker would appear if the script were loaded.
TEST(PythonStacks, TheDumpNeverLoadsAScriptTheJobsUserCanWrite) {
  if (std::system("gdb --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "gdb is not installed";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, as llmwatch runs on the nodes";
  testing::TempDir dir;
  std::string bin = dir / "bin", prog = bin + "/prog", marker = dir / "marker";
  std::filesystem::create_directories(bin);
  std::filesystem::copy_file("/bin/sleep", prog);
  testing::write_file(prog + "-gdb.py", "open('" + marker + "', 'w').write('ran')\n");
  // The directory is a user's (nobody's): what is in it, that user could have put there.
  ASSERT_EQ(::chown(bin.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown((prog + "-gdb.py").c_str(), 65534, 65534), 0);
  FakeRank process({}, prog);
  pid_t pid = process.pid;
  auto dump = dump_python_stack(pid, Seconds(30));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the job's gdb script ran: " << dump.text;
  // The control: gdb as the dump ran it before, with every path safe.
  std::string control = "gdb -p " + std::to_string(pid) +
                        " -batch -nx -iex 'set auto-load safe-path /' -ex bt >/dev/null 2>&1";
  std::system(control.c_str());
  if (!std::filesystem::exists(marker)) GTEST_SKIP() << "gdb cannot attach here (ptrace)";
}

// gdb reads the program's symbols before it attaches when the program is named before -p, and
// after it (the process stopped meanwhile) when not: a rank of plain python3.11 was paused
// 1.5-1.7 s by the look's gdb, 0.9-1.0 s with its program named (bench/look_cost.py). On the
// code before, the argv named none. The script rules are still set before the program loads
// (-iex), as TheDumpNeverLoadsAScriptTheJobsUserCanWrite checks with this argv.
TEST(PythonStacks, GdbReadsTheProgramBeforeItStopsTheProcess) {
  const auto argv = gdb_batch_argv(::getpid(), {"bt"});
  const auto gdb = std::find(argv.begin(), argv.end(), "gdb");
  ASSERT_NE(gdb, argv.end());
  const std::string id = std::to_string(::getpid());
  ASSERT_LT(gdb + 3, argv.end());
  EXPECT_EQ(gdb[1], "/proc/" + id + "/exe");
  EXPECT_EQ(gdb[2], "-p");
  EXPECT_EQ(gdb[3], id);
}

// Who dumps whom (#26.7): a user's process is dumped as its owner, root's own only with the
// system's scripts and those of a directory no one but root can write.
TEST(PythonStacks, TheDumperTakesTheRightsOfTheProcessItDumps) {
  EXPECT_EQ(gdb_identity_for(::getpid(), false).safe_path, "/");
  EXPECT_TRUE(gdb_identity_for(::getpid(), false).prefix.empty());
  if (::geteuid() != 0) GTEST_SKIP() << "the privileged cases need root";
  testing::TempDir dir;
  std::string bin = dir / "bin";
  std::filesystem::create_directories(bin);
  std::filesystem::copy_file("/bin/sleep", bin + "/prog");
  ::chmod(dir.path.c_str(), 0755);
  std::string prog = bin + "/prog";
  FakeRank process({}, prog);
  pid_t pid = process.pid;
  ASSERT_TRUE(testing::eventually([&] {
    return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe") == prog;
  }));
  // Root's process in a directory only root writes (under a root-owned temp dir): trusted.
  auto root = gdb_identity_for(pid, true);
  EXPECT_TRUE(root.prefix.empty());
  EXPECT_EQ(root.safe_path, std::string(kSystemGdbDirs) + ":" + bin) << root.safe_path;
  // The same directory writable by its group: only the system's scripts.
  ::chmod(bin.c_str(), 0775);
  EXPECT_EQ(gdb_identity_for(pid, true).safe_path, kSystemGdbDirs);
  // A process of another user: dumped as that user.
  auto self = gdb_identity_for(::getpid(), true);
  EXPECT_TRUE(self.prefix.empty());  // the test runs as root: root's own
  ::chmod(bin.c_str(), 0755);
  ::chown(prog.c_str(), 65534, 65534);  // the file's owner is not the process's
  EXPECT_TRUE(gdb_identity_for(pid, true).prefix.empty());
}

}  // namespace
}  // namespace llmwatch

// The README's quickstart, run from the README's own text (#27: the quickstart failed as
// written, and nothing said how to point your own job at the local cluster). The lines between
// <!-- quickstart --> and <!-- /quickstart --> run in bash from the source directory, with
// /tmp/llmwatch-qs replaced by a directory of the test's and build/llmwatch by the binary
// under test; the README cannot drift from what works.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

// The shell lines of the README's block between <!-- NAME --> and <!-- /NAME -->.
std::string readme_block(const std::string& name) {
  std::ifstream in(source_dir() + "/README.md");
  std::string line, script;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "<!-- " + name + " -->") inside = true;
    if (line == "<!-- /" + name + " -->") inside = false;
    if (inside && line.rfind("```", 0) != 0 && line.rfind("<!--", 0) != 0) script += line + "\n";
  }
  return script;
}

// The lines of `script` without those holding `what`.
std::string without_lines(const std::string& script, const std::string& what) {
  std::istringstream in(script);
  std::string line, kept;
  while (std::getline(in, line))
    if (line.find(what) == std::string::npos) kept += line + "\n";
  return kept;
}

constexpr const char* kStopLine = "slurm/local-cluster.sh stop /tmp/llmwatch-qs";

// `script` run in bash from the source directory as the README's reader runs it, with
// /tmp/llmwatch-qs replaced by `qs` and build/llmwatch by the binary under test. The cluster
// is stopped afterwards whatever happened (the quickstart's last line does it when all went
// well).
ProcessResult run_as_written(std::string script, const std::string& qs, int timeout_s) {
  script = replace_all(script, "/tmp/llmwatch-qs", qs);
  script = replace_all(script, "build/llmwatch", llmwatch_bin());
  ProcessSpec spec;
  spec.argv = {"bash", "-euo", "pipefail", "-c", script};
  spec.cwd = source_dir();
  spec.timeout = std::chrono::seconds(timeout_s);
  auto r = run_process(spec);
  ProcessSpec stop;
  stop.argv = {source_dir() + "/slurm/local-cluster.sh", "stop", qs};
  stop.timeout = std::chrono::seconds(60);
  run_process(stop);
  return r;
}

TEST(Quickstart, TheReadmesLinesWatchAJobAsWritten) {
  LLMWATCH_REQUIRE_CLUSTER();
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);  // the config is read by an ordinary user below too
  std::string qs = dir / "qs";
  std::string script = readme_block("quickstart");
  ASSERT_NE(script.find("config check"), std::string::npos) << "no quickstart in the README";
  ASSERT_NE(script.find(kStopLine), std::string::npos) << "the quickstart no longer stops";
  auto r = run_as_written(script, qs, 240);
  EXPECT_TRUE(r.ok()) << r.describe("the README's quickstart") << "\n"
                      << script << "\n--- out:\n"
                      << r.out << "\n--- err:\n"
                      << r.err;
  EXPECT_NE(r.out.find("llmwatch.toml: ok ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mytrain"), std::string::npos) << "status does not show the job:\n" << r.out;
  // One `run --once` and no daemon: no next cycle is promised (#27: "next in 29s").
  EXPECT_NE(r.out.find("no next cycle scheduled"), std::string::npos) << r.out;
  // The same config passes `config check` for an ordinary user (llmwatch not run as root).
  if (lookup_user("llmwatch-itest")) {
    ProcessSpec check;
    check.argv = {"setpriv",
                  "--reuid=llmwatch-itest",
                  "--regid=llmwatch-itest",
                  "--clear-groups",
                  "--",
                  llmwatch_bin(),
                  "--config",
                  qs + "/llmwatch.toml",
                  "config",
                  "check"};
    auto as_user = run_process(check);
    EXPECT_TRUE(as_user.ok()) << as_user.describe("config check as llmwatch-itest") << as_user.err;
  }
}

// The README's hang paragraph, run between the quickstart's lines and its last one. Before,
// it had the reader write `none` (the task id of every job that is no array) into the hang
// file, so the resubmitted run hung from its first step too; and a hang written before the
// daemon had learned the run's step time waited first_steps_grace (2 minutes), not the floor.
TEST(Quickstart, TheReadmesHangParagraphRestartsTheRunAndItTrainsAgain) {
  LLMWATCH_REQUIRE_CLUSTER();
  TempDir dir;
  std::string qs = dir / "qs";
  std::string quickstart = readme_block("quickstart");
  std::string hang = readme_block("quickstart-hang");
  ASSERT_NE(hang.find("daemon"), std::string::npos) << "no hang paragraph in the README";
  std::string script = without_lines(quickstart, kStopLine) + hang + kStopLine + "\n";
  auto r = run_as_written(script, qs, 270);  // under ctest's 300 s
  EXPECT_TRUE(r.ok()) << r.describe("the README's hang paragraph") << "\n"
                      << script << "\n--- out:\n"
                      << r.out << "\n--- err:\n"
                      << r.err << "\n--- daemon:\n"
                      << read_file(qs + "/daemon.log");
  // The hang was found from the learned step time, dumped, cancelled and the run resubmitted.
  EXPECT_NE(r.out.find("longest step interval"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job:mytrain/hung"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dump done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cancel done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("restart done"), std::string::npos) << r.out;
  // Exactly one run was hung: the resubmitted one trains on from the checkpoint.
  int logs = 0, stepping = 0;
  for (const auto& entry : std::filesystem::directory_iterator(qs + "/work")) {
    std::string name = entry.path().filename().string();
    if (name.rfind("train-", 0) != 0) continue;
    ++logs;
    std::string log = read_file(entry.path().string());
    if (log.find("heartbeat") == std::string::npos && log.find("global_step") != std::string::npos)
      ++stepping;
  }
  EXPECT_EQ(logs, 2) << "one hung run and its resubmitted run";
  EXPECT_EQ(stepping, 1) << "the resubmitted run trains without hanging";
}

}  // namespace
}  // namespace llmwatch::testing

// The README's quickstart, run from the README's own text (#27: the quickstart failed as
// written, and nothing said how to point your own job at the local cluster). The lines between
// <!-- quickstart --> and <!-- /quickstart --> run in bash from the source directory, with
// /tmp/llmwatch-qs replaced by a directory of the test's and build/llmwatch by the binary
// under test; the README cannot drift from what works.
#include <sys/stat.h>

#include <fstream>

#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

// The shell lines of the README's quickstart block.
std::string quickstart_script() {
  std::ifstream in(source_dir() + "/README.md");
  std::string line, script;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "<!-- quickstart -->") inside = true;
    if (line == "<!-- /quickstart -->") inside = false;
    if (inside && line.rfind("```", 0) != 0 && line.rfind("<!--", 0) != 0) script += line + "\n";
  }
  return script;
}

TEST(Quickstart, TheReadmesLinesWatchAJobAsWritten) {
  LLMWATCH_REQUIRE_CLUSTER();
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);  // the config is read by an ordinary user below too
  std::string qs = dir / "qs";
  std::string script = quickstart_script();
  ASSERT_NE(script.find("config check"), std::string::npos) << "no quickstart in the README";
  script = replace_all(script, "/tmp/llmwatch-qs", qs);
  script = replace_all(script, "build/llmwatch", llmwatch_bin());
  ProcessSpec spec;
  spec.argv = {"bash", "-euo", "pipefail", "-c", script};
  spec.cwd = source_dir();
  spec.timeout = std::chrono::seconds(240);
  auto r = run_process(spec);
  // Stopped whatever happened above (the script's last line does it when all went well).
  ProcessSpec stop;
  stop.argv = {source_dir() + "/slurm/local-cluster.sh", "stop", qs};
  stop.timeout = std::chrono::seconds(60);
  run_process(stop);
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

}  // namespace
}  // namespace llmwatch::testing

// node-check's results as the cycle reads them: a result file that was not rewritten is used as
// it was read, and one that was, in any way (by rename, in place, its time set back), is read
// again.
#include "cycle/checks/node_results.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>

#include "test_util.h"
#include "util/files.h"

namespace llmwatch {
namespace {

std::string report_text(double ts, int processes) {
  NodeReport r;
  r.node = "node-1";
  r.ts = ts;
  r.gpu_processes = processes;
  return r.to_json() + "\n";
}

// Sets the file's times back by `seconds` (its ctime becomes now: a change it cannot hide).
void age(const std::string& path, int seconds) {
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  timespec times[2] = {st.st_atim, st.st_mtim};
  times[0].tv_sec -= seconds;
  times[1].tv_sec -= seconds;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// Trusted at once (a result changed a moment ago is otherwise read again for 2 s): every look
// after the first then goes by the file's stat alone.
constexpr std::chrono::nanoseconds kNoSettle{0};

TEST(NodeResults, AKeptResultIsUsedAndARewrittenOneReadAgain) {
  testing::TempDir dir;
  const std::string path = dir / "node-1.json";
  EXPECT_FALSE(read_node_result(dir.path, "node-1", kNoSettle)) << "no result yet";
  ASSERT_TRUE(write_file_atomic(path, report_text(100, 1)));
  age(path, 60);
  auto first = read_node_result(dir.path, "node-1", kNoSettle);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->gpu_processes, 1);
  EXPECT_EQ(read_node_result(dir.path, "node-1", kNoSettle)->ts, 100);
  // Rewritten by rename (as node-check writes): read again, settled or not.
  ASSERT_TRUE(write_file_atomic(path, report_text(200, 2)));
  EXPECT_EQ(read_node_result(dir.path, "node-1", kNoSettle)->gpu_processes, 2);
  age(path, 60);
  EXPECT_EQ(read_node_result(dir.path, "node-1", kNoSettle)->gpu_processes, 2);
  // Rewritten in place with the same size and its time set back: its ctime says so.
  testing::write_file(path, report_text(300, 3));
  age(path, 60);
  EXPECT_EQ(read_node_result(dir.path, "node-1", kNoSettle)->gpu_processes, 3);
  // Not a report any more: nothing, not the report kept.
  testing::write_file(path, "{not json\n");
  EXPECT_FALSE(read_node_result(dir.path, "node-1", kNoSettle));
  std::remove(path.c_str());
  EXPECT_FALSE(read_node_result(dir.path, "node-1", kNoSettle));
}

}  // namespace
}  // namespace llmwatch

// Storage on real small filesystems (tmpfs with size= and nr_inodes=): filling bytes and
// filling inodes each raise the right finding before writes fail, and clearing them
// resolves it; a quota command that hangs is unknown, not full.
#include <sys/mount.h>

#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

struct Tmpfs {
  std::string dir;
  bool mounted = false;
  Tmpfs(const std::string& path, const std::string& options) : dir(path) {
    std::filesystem::create_directories(dir);
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) == 0;
  }
  ~Tmpfs() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
};

struct StorageRun {
  TempDir dir;
  std::string config;
  explicit StorageRun(const std::string& storage) : config(dir / "llmwatch.toml") {
    // Slurm is not needed here; an unreachable one is just "unknown".
    write_file(config, "[llmwatch]\nstate_dir = \"" + (dir / "state") +
                           "\"\n[slurm]\nbin_dir = \"/nonexistent\"\n" + storage);
  }
  std::vector<std::pair<std::string, std::string>> findings() {
    llmwatch(config, {"run", "--once"});
    auto s = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out, nullptr, false);
    std::vector<std::pair<std::string, std::string>> out;
    if (s.is_object())
      for (const auto& f : s["findings"])
        if (f["key"].get<std::string>().rfind("storage:", 0) == 0)
          out.emplace_back(f["key"], f["severity"]);
    return out;
  }
};

bool write_bytes(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  std::string chunk(64 * 1024, 'x');
  for (size_t done = 0; done < bytes; done += chunk.size())
    out.write(chunk.data(), static_cast<long>(std::min(chunk.size(), bytes - done)));
  out.flush();
  return static_cast<bool>(out);
}

TEST(Storage, FillingBytesWarnsThenCriticalBeforeWritesFailAndClears) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting tmpfs needs root";
  TempDir base;
  Tmpfs fs(base / "fs", "size=4m,nr_inodes=1000");
  if (!fs.mounted) GTEST_SKIP() << "cannot mount tmpfs here";
  // Every alert appended to a file, one JSON message a line, as an operator's program gets it.
  const std::string alerts = base / "alerts.jsonl";
  StorageRun run("[[storage]]\npath = \"" + fs.dir +
                 "\"\nwarn_used = \"80%\"\ncritical_used = \"95%\"\n"
                 "[[alert.exec]]\nname = \"log\"\nmin_severity = \"info\"\n"
                 "command = [\"/bin/sh\", \"-c\", \"cat >> " +
                 alerts + "; echo >> " + alerts + "\"]\n");
  EXPECT_TRUE(run.findings().empty());
  ASSERT_TRUE(write_bytes(fs.dir + "/ckpt-1", 3400 * 1024));  // ~83%
  auto f = run.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0],
            std::make_pair(std::string("storage:" + fs.dir + "/space"), std::string("warning")));
  ASSERT_TRUE(write_bytes(fs.dir + "/ckpt-2", 560 * 1024));  // ~97%, and the write still succeeded
  f = run.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].second, "critical");
  // Told twice: as a warning, and at once as critical when it got worse (before, the critical
  // news waited for the 6-hour repeat).
  const std::string told = read_file(alerts);
  EXPECT_NE(told.find("\"severity\":\"warning\""), std::string::npos) << told;
  EXPECT_NE(told.find("\"severity\":\"critical\""), std::string::npos) << told;
  EXPECT_NE(told.find("now critical (was warning)"), std::string::npos) << told;
  EXPECT_FALSE(write_bytes(fs.dir + "/ckpt-3", 1024 * 1024)) << "the filesystem should now be full";
  std::filesystem::remove(fs.dir + "/ckpt-1");
  std::filesystem::remove(fs.dir + "/ckpt-2");
  std::filesystem::remove(fs.dir + "/ckpt-3");
  run.findings();
  EXPECT_TRUE(run.findings().empty());  // resolved after the hysteresis
  EXPECT_NE(llmwatch(run.config, {"events"}).out.find("/space resolved"), std::string::npos);
}

TEST(Storage, FillingInodesIsAnInodesFinding) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting tmpfs needs root";
  TempDir base;
  Tmpfs fs(base / "fs", "size=64m,nr_inodes=100");
  if (!fs.mounted) GTEST_SKIP() << "cannot mount tmpfs here";
  StorageRun run("[[storage]]\npath = \"" + fs.dir + "\"\nwarn_inodes_used = \"85%\"\n");
  for (int i = 0; i < 90; ++i) write_file(fs.dir + "/f" + std::to_string(i), "x");
  auto f = run.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].first, "storage:" + fs.dir + "/inodes");
  auto status = llmwatch(run.config, {"status"}).out;
  EXPECT_NE(status.find("inodes 9"), std::string::npos) << status;
}

TEST(Storage, HangingQuotaCommandIsUnknownNotFull) {
  TempDir base;
  StorageRun run("[[storage]]\npath = \"" + base.path +
                 "\"\nquota = \"lfs\"\nquota_command = [\"sleep\", \"30\"]\n"
                 "quota_timeout = \"1s\"\n");
  auto started = std::chrono::steady_clock::now();
  auto f = run.findings();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], std::make_pair(std::string("storage:" + base.path + "/quota-unknown"),
                                 std::string("unknown")));
}

}  // namespace
}  // namespace llmwatch::testing

#pragma once
// Shared test helpers: temp directories that clean up, fixture paths, file writing.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace llmwatch::testing {

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "llmwatch-test-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// Polls `ready` until it holds or the deadline passes; never sleeps and hopes.
// A poll costs what `ready` costs, and many run a whole `llmwatch run --once` cycle (0.1-0.2 s
// of CPU on CI's machine): polled every 50 ms, three such waits side by side (ctest -j3) kept
// both of CI's cores busy and starved the clusters, trainers and daemons they waited on. The
// pause after a poll is four times what it took (50 ms at least, 1 s at most): a wait takes
// at most a fifth of a core, and backs off further when the machine is slow.
inline bool eventually(const std::function<bool()>& ready, int seconds = 60) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + std::chrono::seconds(seconds);
  while (clock::now() < deadline) {
    auto began = clock::now();
    if (ready()) return true;
    auto pause = std::clamp<clock::duration>(
        4 * (clock::now() - began), std::chrono::milliseconds(50), std::chrono::seconds(1));
    std::this_thread::sleep_for(std::min<clock::duration>(pause, deadline - clock::now()));
  }
  return ready();
}

// How many times `what` occurs in `text` (overlapping ones too): events said once per episode.
inline std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::string fixture(const std::string& name) {
  return std::string(LLMWATCH_TEST_FIXTURES) + "/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream out(path,
                    append ? std::ios::app | std::ios::binary : std::ios::trunc | std::ios::binary);
  out << text;
}

// A file written at a simulated time: the log's mtime is what clocks its progress (#30), so a
// test that runs its cycles at made-up times writes its lines at them too.
inline void set_mtime(const std::string& path, double unix_time) {
  double whole = std::floor(unix_time);
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = static_cast<time_t>(whole);
  times[0].tv_nsec = times[1].tv_nsec = static_cast<long>((unix_time - whole) * 1e9);
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

}  // namespace llmwatch::testing

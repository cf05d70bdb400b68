#pragma once
// Reads what was appended to a log since the last look, never re-reading a file: the
// cursor remembers device, inode and offset. A replaced file (new inode) or a truncated
// one starts over from the top; a partial last line waits for its newline.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmwatch {

struct LogCursor {
  std::uint64_t dev = 0, inode = 0;
  std::uint64_t offset = 0;
};

struct LogChunk {
  LogChunk() = default;
  LogChunk(LogChunk&&) = default;
  LogChunk& operator=(LogChunk&&) = default;
  LogChunk(const LogChunk&) = default;
  LogChunk& operator=(const LogChunk&) = default;
  ~LogChunk();  // the lines' storage is kept for the next read (see log_tail.cpp)

  // Complete lines appended since the cursor: views into `text`, one buffer per read (no
  // allocation per line), or into `repaired` for a read that was not valid UTF-8. Both live
  // on the heap, so the views survive moves and copies.
  std::shared_ptr<const char[]> text;
  std::shared_ptr<const std::string> repaired;
  std::vector<std::string_view> lines;
  std::uint64_t bytes_read = 0;
  bool reset = false;    // the file was replaced or truncated; reading restarted at 0
  bool skipped = false;  // first look at a huge file: only its tail was read
  std::string error;     // cannot stat/open: the caller reports "unknown"
  bool hung = false;     // no answer within the deadline: the cursor was left as it was
};

struct LogTailLimits {
  std::uint64_t max_bytes_per_read = 64 << 20;  // per file per cycle; the rest waits
  std::size_t max_line = 1 << 20;               // longer lines are cut, not buffered forever
};

LogChunk read_appended(const std::string& path, LogCursor& cursor,
                       const LogTailLimits& limits = {});

// Frees the read buffer kept for the next read (see log_tail.cpp); called once a cycle's
// reads are done, so a big first read does not stay resident between cycles.
void release_log_read_buffers();

// read_appended bounded by a deadline (util/deadline_call.h): on a hung mount the read is
// left behind, `hung` is set, and the cursor stays where it was, so nothing is lost or read
// twice once the mount answers again.
LogChunk read_appended_within(const std::string& path, LogCursor& cursor,
                              std::chrono::milliseconds limit, const LogTailLimits& limits = {});

}  // namespace llmwatch

#pragma once
// Reads what was appended to a log since the last look, never re-reading a file: the
// cursor remembers device, inode and offset. A replaced file (new inode) or a truncated
// one starts over from the top; a partial last line waits for its newline.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace llmwatch {

struct LogCursor {
  std::uint64_t dev = 0, inode = 0;
  std::uint64_t offset = 0;
};

struct LogChunk {
  // Complete lines appended since the cursor (read_appended: views into `storage`, which
  // lives on the heap, so the views survive moves and copies; scan_appended hands them on
  // instead and keeps none).
  std::shared_ptr<const std::string> storage;
  std::vector<std::string_view> lines;
  std::uint64_t bytes_read = 0;
  double mtime = 0;      // the file's last write, stat'ed after the read (0: unknown)
  bool reset = false;    // the file was replaced or truncated; reading restarted at 0
  bool skipped = false;  // first look at a huge file: only its tail was read
  std::string error;     // cannot stat/open: the caller reports "unknown"
  bool hung = false;     // no answer within the deadline: the cursor was left as it was
};

struct LogTailLimits {
  std::uint64_t max_bytes_per_read = 64 << 20;  // per file per cycle; the rest waits
  std::size_t max_line = 1 << 20;               // longer lines are cut, not buffered forever
};

// A batch of lines, and the file offset just past each one's line end (where the bytes that
// make it end: log_growth.h tells when they were written).
using LineSink = std::function<void(std::span<const std::string_view> lines,
                                    std::span<const std::uint64_t> ends)>;

// Hands on the complete lines appended since the cursor, a batch at a time, reading through
// one small buffer (a line and a piece at most): nothing of the file is held after its lines
// were handed on, so a 64 MiB first look costs what `cat` costs, not 64 MiB. Lines are valid
// UTF-8 (repaired where not), end at '\n', '\r\n' or a lone '\r' (tqdm and Lightning redraw
// with '\r'), and are at most max_line bytes (the rest of a longer one is dropped). The views
// are valid during the call only. The returned chunk has no lines.
LogChunk scan_appended(const std::string& path, LogCursor& cursor, const LogTailLimits& limits,
                       const LineSink& on_lines);

// scan_appended, with the lines kept in the chunk.
LogChunk read_appended(const std::string& path, LogCursor& cursor,
                       const LogTailLimits& limits = {});

// read_appended bounded by a deadline (util/deadline_call.h): on a hung mount the read is
// left behind, `hung` is set, and the cursor stays where it was, so nothing is lost or read
// twice once the mount answers again.
LogChunk read_appended_within(const std::string& path, LogCursor& cursor,
                              std::chrono::milliseconds limit, const LogTailLimits& limits = {});

}  // namespace llmwatch

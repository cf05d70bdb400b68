#include "probes/log_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <memory>
#include <string_view>

#include "util/deadline_call.h"
#include "util/line_ends.h"
#include "util/text.h"
#include "util/timespec.h"

namespace llmwatch {

namespace {

// How much of the line at `from` fits in `max` bytes without cutting a character in two.
size_t utf8_cut(std::string_view data, size_t from, size_t max) {
  size_t len = max;
  while (len > 0 && (static_cast<unsigned char>(data[from + len]) & 0xC0) == 0x80) --len;
  return len;
}

// The file at the cursor: opened, checked, and the cursor moved to where reading starts (the
// top of a replaced or truncated file; the tail of a huge one seen for the first time).
// Returns the descriptor (-1 with chunk.error set) and how many bytes to read.
int open_at_cursor(const std::string& path, LogCursor& cursor, const LogTailLimits& limits,
                   LogChunk& chunk, std::uint64_t& want) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return chunk.error = path + ": " + std::strerror(errno), -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    chunk.error = path + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    chunk.error = path + ": not a regular file (a FIFO, device or directory cannot be followed)";
    ::close(fd);
    return -1;
  }
  auto size = static_cast<std::uint64_t>(st.st_size);
  bool same_file = cursor.dev == st.st_dev && cursor.inode == st.st_ino;
  if (!same_file || size < cursor.offset) {
    chunk.reset = cursor.inode != 0;
    bool first_look = cursor.inode == 0;
    cursor = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino), 0};
    // A multi-GB log seen for the first time: its tail holds the current step.
    if (first_look && size > limits.max_bytes_per_read) {
      cursor.offset = size - limits.max_bytes_per_read;
      chunk.skipped = true;
    }
  }
  want = std::min<std::uint64_t>(size - cursor.offset, limits.max_bytes_per_read);
  return fd;
}

}  // namespace

LogChunk scan_appended(const std::string& path, LogCursor& cursor, const LogTailLimits& limits,
                       const LineSink& on_lines) {
  LogChunk chunk;
  std::uint64_t want = 0;
  int fd = open_at_cursor(path, cursor, limits, chunk, want);
  if (fd < 0) return chunk;
  // One buffer, as small as the read or as a line plus a piece: what is read is split while it
  // is in the CPU's cache, handed on, and dropped; a partial line moves to the front.
  constexpr std::uint64_t kPiece = 1 << 16;
  const std::uint64_t capacity = std::min<std::uint64_t>(want, limits.max_line + kPiece) + 1;
  std::unique_ptr<char[]> holder(new char[capacity]);
  char* buf = holder.get();
  const std::uint64_t end_pos = cursor.offset + want;
  std::uint64_t file_pos = cursor.offset;  // the file offset of buf[0]
  std::uint64_t read_pos = cursor.offset;  // the next byte to read
  std::uint64_t consumed = cursor.offset;  // up to here, lines were handed on
  size_t len = 0, start = 0, scanned = 0;  // bytes in buf; the current line; scanned up to
  bool fragment = chunk.skipped;           // we landed mid-line: drop up to the first line end
  bool overlong = false;                   // the current line was handed on cut: drop its rest
  bool maybe_invalid = false;              // a byte outside ASCII was seen: validate lines
  std::vector<std::string_view> lines;
  std::vector<std::uint64_t> ends;  // the file offset past each line's end
  std::list<std::string> repaired;  // lines that were not valid UTF-8, made valid (stable;
                                    // unlike a deque, allocates nothing while empty)
  auto take = [&](size_t from, size_t n, std::uint64_t end) {
    if (n > limits.max_line) n = utf8_cut({buf, from + n}, from, limits.max_line);
    lines.emplace_back(buf + from, n);
    ends.push_back(end);
  };
  auto on_end = [&](size_t end) {
    if (end < start) return;  // the '\n' of a "\r\n"
    bool whole = !fragment && !overlong;
    fragment = overlong = false;
    size_t line_start = start;
    start = end + 1;
    if (buf[end] == '\r' && start < len && buf[start] == '\n') ++start;
    consumed = file_pos + start;
    if (whole) take(line_start, end - line_start, consumed);
  };
  for (;;) {
    ssize_t n = 0;
    std::uint64_t room = std::min<std::uint64_t>(capacity - 1 - len, end_pos - read_pos);
    while (room > 0 && (n = ::pread(fd, buf + len, room, static_cast<off_t>(read_pos))) < 0 &&
           errno == EINTR) {
    }
    if (n > 0) len += static_cast<size_t>(n), read_pos += static_cast<std::uint64_t>(n);
    bool last = n <= 0 || read_pos == end_pos;
    // A '\r' that ends what was read may be the first half of a "\r\n": it waits for more.
    size_t to = last || len == 0 ? len : len - 1;
    maybe_invalid |= scan_line_ends(buf, scanned, to, on_end);
    scanned = to;
    // A line that fills max_line is handed on cut, and the rest of it dropped.
    if (!fragment && !overlong && len - start >= limits.max_line) {
      take(start, limits.max_line, file_pos + len);  // its end is not read yet: what was
      overlong = true;
    }
    // Validity is checked only once a byte outside ASCII was seen (in most logs, never).
    if (maybe_invalid)
      for (auto& line : lines)
        if (!is_valid_utf8(line)) line = repaired.emplace_back(valid_utf8(line));
    if (!lines.empty()) on_lines(lines, ends);
    lines.clear();
    ends.clear();
    repaired.clear();
    if (last) break;
    if (fragment || overlong) start = scanned;  // what was scanned of it is dropped
    std::memmove(buf, buf + start, len - start);
    file_pos += start, len -= start, scanned -= start, start = 0;
  }
  // The last write, taken after the read: no line read can be younger (#30).
  struct stat after {};
  if (::fstat(fd, &after) == 0) chunk.mtime = seconds_of(after.st_mtim);
  ::close(fd);
  chunk.bytes_read = read_pos - cursor.offset;
  // A line end never came: a dropped fragment or the rest of a cut line is consumed whole;
  // a plain partial line waits for its end.
  if (fragment || overlong) consumed = file_pos + len;
  cursor.offset = consumed;
  return chunk;
}

LogChunk read_appended(const std::string& path, LogCursor& cursor, const LogTailLimits& limits) {
  auto storage = std::make_shared<std::string>();
  std::vector<std::pair<size_t, size_t>> spans;
  LogChunk chunk =
      scan_appended(path, cursor, limits,
                    [&](std::span<const std::string_view> lines, std::span<const std::uint64_t>) {
                      for (const auto& line : lines) {
                        spans.emplace_back(storage->size(), line.size());
                        storage->append(line);
                      }
                    });
  const std::string_view text(*storage);
  chunk.lines.reserve(spans.size());
  for (const auto& [from, n] : spans) chunk.lines.push_back(text.substr(from, n));
  chunk.storage = std::move(storage);
  return chunk;
}

LogChunk read_appended_within(const std::string& path, LogCursor& cursor,
                              std::chrono::milliseconds limit, const LogTailLimits& limits) {
  struct Read {
    LogChunk chunk;
    LogCursor cursor;
  };
  auto call = call_with_deadline<Read>("read " + path, limit, [path, start = cursor, limits] {
    Read r{{}, start};
    r.chunk = read_appended(path, r.cursor, limits);
    return r;
  });
  if (!call.ok()) {
    LogChunk hung;
    hung.error = call.error;
    hung.hung = true;
    return hung;
  }
  cursor = call.value->cursor;
  return std::move(call.value->chunk);
}

}  // namespace llmwatch

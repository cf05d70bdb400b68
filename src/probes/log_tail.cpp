#include "probes/log_tail.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "util/deadline_call.h"
#include "util/text.h"

namespace llmwatch {

namespace {

// How much of the line at `from` fits in `max` bytes without cutting a character in two.
size_t utf8_cut(std::string_view data, size_t from, size_t max) {
  size_t len = max;
  while (len > 0 && (static_cast<unsigned char>(data[from + len]) & 0xC0) == 0x80) --len;
  return len;
}

// A read's bytes: one allocation, not zero-filled. A big one asks for transparent huge pages:
// a fresh 64 MiB buffer otherwise costs a page fault per 4 KiB, more than the read itself.
std::shared_ptr<char[]> read_buffer(std::size_t n) {
  constexpr std::size_t kHuge = 2u << 20;
  auto release = [](char* p) { std::free(p); };
  if (n >= kHuge) {
    std::size_t rounded = (n + kHuge - 1) / kHuge * kHuge;
    if (void* p = std::aligned_alloc(kHuge, rounded)) {
      ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without it, small pages
      return {static_cast<char*>(p), release};
    }
  }
  void* p = std::malloc(std::max<std::size_t>(n, 1));
  if (!p) throw std::bad_alloc();
  return {static_cast<char*>(p), release};
}

// Lines with invalid UTF-8, made valid (invalid sequences become U+FFFD) in a buffer of
// their own; the views move there.
void repair_lines(LogChunk& chunk) {
  auto repaired = std::make_shared<std::string>();
  std::vector<std::pair<size_t, size_t>> spans;
  for (const auto& line : chunk.lines) {
    std::string valid = valid_utf8(line);
    spans.emplace_back(repaired->size(), valid.size());
    *repaired += valid;
  }
  const std::string_view text(*repaired);
  for (size_t i = 0; i < spans.size(); ++i)
    chunk.lines[i] = text.substr(spans[i].first, spans[i].second);
  chunk.repaired = std::move(repaired);
}

}  // namespace

LogChunk read_appended(const std::string& path, LogCursor& cursor, const LogTailLimits& limits) {
  LogChunk chunk;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return chunk.error = path + ": " + std::strerror(errno), chunk;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    chunk.error = path + ": " + std::strerror(errno);
    ::close(fd);
    return chunk;
  }
  if (!S_ISREG(st.st_mode)) {
    chunk.error = path + ": not a regular file (a FIFO, device or directory cannot be followed)";
    ::close(fd);
    return chunk;
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
  std::uint64_t want = std::min<std::uint64_t>(size - cursor.offset, limits.max_bytes_per_read);
  // Read straight into the chunk's shared buffer: the line views point into it, and it never
  // moves.
  std::shared_ptr<char[]> buffer = read_buffer(static_cast<std::size_t>(want));
  std::uint64_t got = 0;
  while (got < want) {
    ssize_t n =
        ::pread(fd, buffer.get() + got, want - got, static_cast<off_t>(cursor.offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  chunk.bytes_read = got;
  const std::string_view data(buffer.get(), static_cast<std::size_t>(got));

  size_t start = 0;
  if (chunk.skipped) {  // we landed mid-line: drop the fragment
    size_t nl = data.find_first_of("\r\n");
    start = nl == std::string_view::npos ? data.size() : nl + 1;
  }
  size_t consumed = start;
  // A line ends at '\n', '\r\n' or a lone '\r': tqdm and Lightning progress bars redraw
  // with '\r' only, and each redraw carries the current step.
  auto add_line = [&](size_t from, size_t len) { chunk.lines.push_back(data.substr(from, len)); };
  // The next '\r' is remembered, so each byte is scanned once (find_first_of("\r\n") ran a
  // two-byte memchr per byte: most of a cycle's CPU on big logs).
  size_t next_cr = data.find('\r', start);
  auto line_end = [&](size_t from) {
    if (next_cr != std::string_view::npos && next_cr < from) next_cr = data.find('\r', from);
    const void* nl = std::memchr(data.data() + from, '\n', data.size() - from);
    size_t lf = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data.data())
                   : std::string_view::npos;
    return std::min(lf, next_cr);
  };
  while (start < data.size()) {
    size_t end = line_end(start);
    if (end == std::string_view::npos) {
      // A partial line waits for its end, unless it is already absurdly long.
      if (data.size() - start >= limits.max_line) {
        add_line(start, utf8_cut(data, start, limits.max_line));
        consumed = data.size();
      }
      break;
    }
    add_line(start,
             end - start <= limits.max_line ? end - start : utf8_cut(data, start, limits.max_line));
    start = end + 1;
    if (data[end] == '\r' && start < data.size() && data[start] == '\n') ++start;
    consumed = start;
  }
  // One validity check for the whole read (almost always clean); only a read that is not
  // valid UTF-8 pays for repairing its lines. The cursor counts the file's bytes, never the
  // repaired ones (a U+FFFD is 3 bytes where the file had 1).
  if (!is_valid_utf8(data.substr(0, consumed))) repair_lines(chunk);
  cursor.offset += consumed;
  chunk.text = std::move(buffer);
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

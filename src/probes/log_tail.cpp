#include "probes/log_tail.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>

#include "util/deadline_call.h"
#include "util/line_ends.h"
#include "util/text.h"

namespace llmwatch {

namespace {

// How much of the line at `from` fits in `max` bytes without cutting a character in two.
size_t utf8_cut(std::string_view data, size_t from, size_t max) {
  size_t len = max;
  while (len > 0 && (static_cast<unsigned char>(data[from + len]) & 0xC0) == 0x80) --len;
  return len;
}

// Read buffers. A fresh big buffer costs a page fault and a zeroed page per 4 KiB, more
// than the read itself, so the last one released is kept for the next read (one at a time:
// reads of one cycle follow each other) until release_log_read_buffers() at the end of the
// cycle gives it back. A big one asks for transparent huge pages.
// The lines vector of a big read is as costly (16 bytes a line, grown by doubling into fresh
// pages), so its storage is kept the same way.
struct SpareBuffer {
  std::mutex mutex;
  char* data = nullptr;
  std::size_t capacity = 0;
  std::vector<std::string_view> lines;
};
SpareBuffer& spare() {
  static SpareBuffer s;
  return s;
}

std::shared_ptr<char[]> read_buffer(std::size_t n) {
  n = std::max<std::size_t>(n, 1);
  char* data = nullptr;
  std::size_t capacity = 0;
  {
    std::lock_guard lock(spare().mutex);
    if (spare().capacity >= n) {
      std::swap(data, spare().data);
      std::swap(capacity, spare().capacity);
    }
  }
  if (!data) {
    constexpr std::size_t kHuge = 2u << 20;
    capacity = n >= kHuge ? (n + kHuge - 1) / kHuge * kHuge : n;
    data = static_cast<char*>(n >= kHuge ? std::aligned_alloc(kHuge, capacity)
                                         : std::malloc(capacity));
    if (!data) throw std::bad_alloc();
    if (n >= kHuge) ::madvise(data, capacity, MADV_HUGEPAGE);  // advice only
  }
  return {data, [capacity](char* p) {
            std::lock_guard lock(spare().mutex);
            if (capacity > spare().capacity) {  // keep the larger of the two
              std::free(spare().data);
              spare().data = p;
              spare().capacity = capacity;
            } else {
              std::free(p);
            }
          }};
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
  // moves. It is read a piece at a time, and each piece is split into lines while it is still
  // in the CPU's cache.
  std::shared_ptr<char[]> buffer = read_buffer(static_cast<std::size_t>(want));
  const char* data = buffer.get();
  if (want >= (1 << 20)) {  // a big read: take the kept lines storage
    std::lock_guard lock(spare().mutex);
    chunk.lines.swap(spare().lines);
    chunk.lines.clear();
  }
  constexpr std::uint64_t kPiece = 1 << 16;
  std::uint64_t got = 0;
  size_t start = 0, consumed = 0;  // where the current line begins; what the lines cover
  bool fragment = chunk.skipped;   // we landed mid-line: drop up to the first line end
  bool ascii = true;
  auto add_line = [&](size_t from, size_t len) {  // longer than max_line: cut, never buffered
    if (len > limits.max_line) len = utf8_cut({data, from + len}, from, limits.max_line);
    chunk.lines.emplace_back(data + from, len);
  };
  auto on_end = [&](size_t end) {
    if (end < start) return;  // the '\n' of a "\r\n"
    if (!fragment) add_line(start, end - start);
    fragment = false;
    start = end + 1;
    if (data[end] == '\r' && start < got && data[start] == '\n') ++start;
    consumed = start;
  };
  for (size_t scanned = 0;;) {
    std::uint64_t piece = std::min(kPiece, want - got);
    ssize_t n = 0;
    while (piece > 0 &&
           (n = ::pread(fd, buffer.get() + got, piece, static_cast<off_t>(cursor.offset + got))) <
               0 &&
           errno == EINTR) {
    }
    if (n > 0) got += static_cast<std::uint64_t>(n);
    bool last = n <= 0 || got == want;
    // A '\r' that ends the piece may be the first half of a "\r\n": it waits for the next.
    size_t to = last ? static_cast<size_t>(got) : static_cast<size_t>(got) - 1;
    ascii &= !scan_line_ends(data, scanned, to, on_end);
    scanned = to;
    if (last) break;
  }
  ::close(fd);
  chunk.bytes_read = got;
  // A partial line waits for its end, unless it is already absurdly long.
  if (fragment || got - start >= limits.max_line) {
    if (!fragment) add_line(start, static_cast<size_t>(got) - start);
    consumed = static_cast<size_t>(got);
  }
  // Validity is checked only for a read with a byte outside ASCII (almost none are); only a
  // read that is not valid UTF-8 pays for repairing its lines. The cursor counts the file's
  // bytes, never the repaired ones (a U+FFFD is 3 bytes where the file had 1).
  if (!ascii && !is_valid_utf8({data, consumed})) repair_lines(chunk);
  cursor.offset += consumed;
  chunk.text = std::move(buffer);
  return chunk;
}

LogChunk::~LogChunk() {
  if (lines.capacity() < 4096) return;  // small ones cost nothing to allocate
  std::lock_guard lock(spare().mutex);
  if (lines.capacity() > spare().lines.capacity()) spare().lines.swap(lines);
}

void release_log_read_buffers() {
  std::lock_guard lock(spare().mutex);
  std::free(spare().data);
  spare().data = nullptr;
  spare().capacity = 0;
  spare().lines = {};
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

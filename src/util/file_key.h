#pragma once
// A file as stat sees it. A file whose every one of these is the same was not rewritten: a
// writer that renames a new file over it (node-check's results, the timing helper's summary)
// makes a new inode as well as a new mtime, and one that writes in place a new size or mtime
// (ctime too, should the mtime be set back). What was read from it can then be used again.
#include <sys/stat.h>

#include <optional>
#include <string>

namespace llmwatch {

struct FileKey {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  long long mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileKey&) const = default;
};

FileKey key_of(const struct stat& st);
// The key of `path` (stat, following links); nullopt when it cannot be stat'ed.
std::optional<FileKey> file_key(const std::string& path);

}  // namespace llmwatch

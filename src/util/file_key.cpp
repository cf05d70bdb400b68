#include "util/file_key.h"

namespace llmwatch {

FileKey key_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size,
          st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec,
          st.st_ctim.tv_sec * 1'000'000'000LL + st.st_ctim.tv_nsec};
}

std::optional<FileKey> file_key(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return key_of(st);
}

}  // namespace llmwatch

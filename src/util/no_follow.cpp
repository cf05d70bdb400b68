#include "util/no_follow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/strings.h"

namespace llmwatch {

NoFollowCreate create_no_follow(const std::string& path, mode_t mode) {
  NoFollowCreate out;
  auto parts = split(path, '/');
  if (path.empty() || parts.back().empty()) return out.error = path + ": not a file name", out;
  int dir = ::open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (size_t i = 0; dir >= 0 && i + 1 < parts.size(); ++i) {
    if (parts[i].empty() || parts[i] == ".") continue;
    int next = ::openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int why = errno;
    ::close(dir);
    dir = next;
    if (dir < 0) {
      out.error =
          path + ": " +
          (why == ELOOP || why == ENOTDIR ? "'" + parts[i] + "' is a symlink or not a directory"
                                          : std::string(std::strerror(why))) +
          ": not touched";
      return out;
    }
  }
  if (dir < 0) return out.error = path + ": " + std::strerror(errno), out;
  const std::string& name = parts.back();
  out.fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (out.fd < 0 && errno == EEXIST) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      out.existed = true;
    else
      out.error = path + ": exists and is not a regular file (a symlink?): not touched";
  } else if (out.fd < 0) {
    out.error = path + ": " + std::strerror(errno);
  }
  ::close(dir);
  return out;
}

}  // namespace llmwatch

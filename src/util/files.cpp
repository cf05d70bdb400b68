#include "util/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace llmwatch {

Result<std::string> read_file_or_why(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::string out;
  int why = fd < 0 ? errno : 0;
  char buf[64 * 1024];
  for (ssize_t n; fd >= 0 && why == 0 && (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      why = errno;  // a directory: EISDIR
    else
      out.append(buf, static_cast<size_t>(n));
  }
  if (fd >= 0) ::close(fd);
  if (why != 0) return Error{"cannot read '" + path + "': " + std::strerror(why)};
  return out;
}

std::optional<std::string> read_text_file(const std::string& path) {
  auto text = read_file_or_why(path);
  return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

Status write_file_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << text;
    if (!out.flush()) {
      std::remove(tmp.c_str());
      return Error{tmp + ": cannot write"};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string error = path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return Error{error};
  }
  return {};
}

Status make_private_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot make " + dir + ": " + ec.message()};
  ::chmod(dir.c_str(), 0700);
  return {};
}

Status write_private_file(const std::string& path, const std::string& text) {
  Status written = write_file_atomic(path, text);
  if (written) ::chmod(path.c_str(), 0600);
  return written;
}

void keep_newest_files(const std::string& dir, std::size_t keep) {
  std::error_code ec;
  std::vector<std::filesystem::directory_entry> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) files.push_back(e);
  if (files.size() <= keep) return;
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    std::error_code e1, e2;
    return a.last_write_time(e1) > b.last_write_time(e2);
  });
  for (size_t i = keep; i < files.size(); ++i) std::filesystem::remove(files[i].path(), ec);
}

}  // namespace llmwatch

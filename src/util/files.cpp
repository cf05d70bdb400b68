#include "util/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace llmwatch {

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

}  // namespace llmwatch

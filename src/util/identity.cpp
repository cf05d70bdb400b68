#include "util/identity.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace llmwatch {

std::string current_user_name() {
  std::vector<char> buf(16384);
  passwd pw{}, *result = nullptr;
  if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &result) != 0 || !result)
    return std::to_string(::geteuid());  // no passwd entry (a container): the uid says who
  return pw.pw_name;
}

bool running_as_root() {
  return ::geteuid() == 0;
}

std::optional<UserIds> lookup_user(const std::string& name) {
  if (name.empty()) return std::nullopt;
  std::vector<char> buf(16384);
  passwd pw{}, *result = nullptr;
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &result) != 0 || !result)
    return std::nullopt;
  return UserIds{pw.pw_uid, pw.pw_gid};
}

}  // namespace llmwatch

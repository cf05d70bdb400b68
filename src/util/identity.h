#pragma once
// Who llmwatch runs as, and who owns what it acts on. Actions taken for a job use the job
// owner's identity; these helpers look owners up without ever throwing.
#include <sys/types.h>

#include <optional>
#include <string>

namespace llmwatch {

struct UserIds {
  uid_t uid;
  gid_t gid;
};

// The effective user's name (its uid when it has no passwd entry).
std::string current_user_name();
bool running_as_root();
// The uid and primary gid of a user name; nullopt when there is no such user.
std::optional<UserIds> lookup_user(const std::string& name);

}  // namespace llmwatch

#pragma once
// Creating a file that a user may have laid the path to: root must never be led by a symlink,
// at any component, into a place the user could not write (a switch file in a directory the
// job's user controls). O_NOFOLLOW guards the last component only; this walks them all.
#include <sys/types.h>

#include <string>

namespace llmwatch {

struct NoFollowCreate {
  int fd = -1;           // the new file, open for writing (the caller closes it)
  bool existed = false;  // a regular file was already there: nothing created
  std::string error;     // why not ("" when fd >= 0 or existed)
};

// Creates `path` with O_EXCL. Each directory from "/" (or from the working directory for a
// relative path) is opened with O_NOFOLLOW | O_DIRECTORY under the one before it, so a
// symlinked parent or a symlink at the name is refused, not followed, and nothing is created.
NoFollowCreate create_no_follow(const std::string& path, mode_t mode);

}  // namespace llmwatch

// kill / save switches: files the training loop polls. `kill` asks it to exit gracefully
// (and, while present, makes new array tasks exit at start); `save` asks for a checkpoint,
// and the training loop removes the file when done.
// Config per [[job]]: kill_switch, save_switch (paths).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "action.h"
#include "registry.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/identity.h"
#include "util/no_follow.h"

namespace llmwatch {
namespace {

class SwitchAction : public ActionPlugin {
 public:
  SwitchAction(std::string name, std::string JobSettings::*path)
      : name_(std::move(name)), path_(path) {}
  std::string name() const override { return name_; }
  std::string help() const override {
    return name_ == "kill" ? "create the job's kill switch (graceful exit)"
                           : "create the job's save switch (checkpoint now)";
  }
  bool manual() const override { return true; }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.settings || (r.settings->*path_).empty())
      return {ActionState::Skipped, "no " + name_ + "_switch configured for " + r.job};
    const std::string& path = r.settings->*path_;
    // As root, llmwatch acts for the job's owner: it creates no directories for them, and
    // the switch it creates belongs to them.
    std::optional<UserIds> owner;
    if (running_as_root()) {
      owner = r.task ? lookup_user(r.task->user) : std::nullopt;
      if (!owner)
        return {ActionState::Failed,
                "the owner of " + r.job +
                    " is unknown: llmwatch runs as root and creates no file for no one"};
    } else {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    }
    // No symlink is followed, at the name or at any directory above it (#26 B: a symlinked
    // parent led root into places the owner cannot write); nothing is truncated (O_EXCL).
    auto created = create_no_follow(path, 0644);
    if (created.existed) return {ActionState::Done, path + " already present"};
    if (created.fd < 0) return {ActionState::Failed, created.error};
    int fd = created.fd;
    if (owner && ::fchown(fd, owner->uid, owner->gid) != 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(path.c_str());
      return {ActionState::Failed, path + ": cannot give it to " + r.task->user + ": " + why};
    }
    ::close(fd);
    // The cycle reports when the training loop removes a save switch (checkpoint taken).
    if (name_ == "save") ctx.store.put(kv::save_requested(r.job), "1", ctx.now);
    return {ActionState::Done, "created " + path};
  }

 private:
  std::string name_;
  std::string JobSettings::*path_;
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<SwitchAction>("kill", &JobSettings::kill_switch));
LLMWATCH_REGISTER_ACTION(std::make_unique<SwitchAction>("save", &JobSettings::save_switch));

}  // namespace llmwatch

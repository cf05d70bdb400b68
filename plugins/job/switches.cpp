// kill / save switches: files the training loop polls. `kill` asks it to exit gracefully
// (and, while present, makes new array tasks exit at start); `save` asks for a checkpoint,
// and the training loop removes the file when done.
// Config per [[job]]: kill_switch, save_switch (paths).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "action.h"
#include "store/store.h"

namespace llmwatch {
namespace {

class SwitchAction : public ActionPlugin {
 public:
  SwitchAction(std::string name, std::string JobSettings::*path)
      : name_(std::move(name)), path_(path) {}
  std::string name() const override { return name_; }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.settings || (r.settings->*path_).empty())
      return {"skipped", "no " + name_ + "_switch configured for " + r.job};
    const std::string& path = r.settings->*path_;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd < 0) return {"failed", path + ": " + std::strerror(errno)};
    ::close(fd);
    // The cycle reports when the training loop removes a save switch (checkpoint taken).
    if (name_ == "save") ctx.store.put("save.requested:" + r.job, "1", ctx.now);
    return {"done", "created " + path};
  }

 private:
  std::string name_;
  std::string JobSettings::*path_;
};

}  // namespace

std::unique_ptr<ActionPlugin> make_kill_switch_action() {
  return std::make_unique<SwitchAction>("kill", &JobSettings::kill_switch);
}
std::unique_ptr<ActionPlugin> make_save_switch_action() {
  return std::make_unique<SwitchAction>("save", &JobSettings::save_switch);
}

}  // namespace llmwatch

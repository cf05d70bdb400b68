// cleanup: deletes one old checkpoint of a [[storage]] path, chosen by the storage check
// (probes/checkpoints.h: beyond keep_last, never fewer than 2 complete, never one being
// written). As every action it is journaled before it runs and runs once per checkpoint;
// `cleanup_dry_run` (the default) and [llmwatch] dry_run only say what would go, under a key
// of their own, so that turning dry-run off later still deletes.
#include <filesystem>

#include "action.h"
#include "registry.h"
#include "util/units.h"

namespace llmwatch {
namespace {

class CleanupAction : public ActionPlugin {
 public:
  std::string name() const override { return "cleanup"; }
  ActionTarget target() const override { return ActionTarget::Storage; }
  std::string help() const override {
    return "delete a checkpoint beyond [[storage]] keep_last (dry-run unless cleanup_dry_run = "
           "false)";
  }
  std::string idem_key(const ActionRequest& r) const override {
    return "cleanup:" + r.path + (r.dry_run || says_only(r) ? ":dry-run" : "");
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext&) override {
    std::string what = r.path + " (" + r.finding.evidence.front() + ")";
    if (says_only(r)) return {ActionState::DryRun, "would delete " + what};
    std::error_code ec;
    std::filesystem::remove_all(r.path, ec);
    if (ec) return {ActionState::Failed, "could not delete " + what + ": " + ec.message()};
    return {ActionState::Done, "deleted old checkpoint " + what};
  }

 private:
  static bool says_only(const ActionRequest& r) { return !r.storage || r.storage->cleanup_dry_run; }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<CleanupAction>());

}  // namespace llmwatch

#include "registry.h"

#include <map>
#include <mutex>

namespace llmwatch {

std::string task_identity(const std::string& display_id, std::int64_t start) {
  return display_id + "@" + std::to_string(start);
}

std::string restart_key(const std::string& display_id, std::int64_t start) {
  return "restart:" + task_identity(display_id, start);
}

std::string task_identity(const ActionRequest& r) {
  return r.task ? task_identity(r.task->display_id(), r.task->start_time) : r.job;
}

std::string ActionPlugin::idem_key(const ActionRequest& r) const {
  return name() + ":" + task_identity(r) + ":" + r.finding.key;
}

const char* action_state_name(ActionState s) {
  switch (s) {
    case ActionState::Done:
      return "done";
    case ActionState::Failed:
      return "failed";
    case ActionState::Skipped:
      return "skipped";
    case ActionState::DryRun:
      return "dry-run";
    case ActionState::Waiting:
      return "waiting";
  }
  return "failed";
}

namespace {

// A function-local static, so that registration from any file's static initialiser finds it.
std::map<std::string, std::unique_ptr<ActionPlugin>>& actions() {
  static std::map<std::string, std::unique_ptr<ActionPlugin>> registry;
  return registry;
}

}  // namespace

bool register_action(std::unique_ptr<ActionPlugin> plugin) {
  add_action_info({plugin->name(), plugin->target(), plugin->help(), plugin->manual()});
  std::string name = plugin->name();
  actions()[name] = std::move(plugin);
  return true;
}

ActionPlugin* find_action(const std::string& name) {
  auto it = actions().find(name);
  return it == actions().end() ? nullptr : it->second.get();
}

std::vector<std::string> action_names() {
  std::vector<std::string> out;
  for (const auto& [name, _] : actions()) out.push_back(name);
  return out;
}

}  // namespace llmwatch

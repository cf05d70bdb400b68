#include "registry.h"

#include <map>

namespace llmwatch {

std::unique_ptr<ActionPlugin> make_alert_action();
std::unique_ptr<ActionPlugin> make_cancel_action();
std::unique_ptr<ActionPlugin> make_restart_action();
std::unique_ptr<ActionPlugin> make_kill_switch_action();
std::unique_ptr<ActionPlugin> make_save_switch_action();
std::unique_ptr<ActionPlugin> make_hold_action();
std::unique_ptr<ActionPlugin> make_release_action();
std::unique_ptr<ActionPlugin> make_requeue_action();
std::unique_ptr<ActionPlugin> make_drain_action();
std::unique_ptr<ActionPlugin> make_undrain_action();

std::string ActionPlugin::idem_key(const ActionRequest& r) const {
  return name() + ":" + (r.task ? r.task->display_id() : r.job) + ":" + r.finding.key;
}

static const std::map<std::string, std::unique_ptr<ActionPlugin>>& actions() {
  static const auto registry = [] {
    std::map<std::string, std::unique_ptr<ActionPlugin>> m;
    for (auto* make :
         {make_alert_action, make_cancel_action, make_restart_action, make_kill_switch_action,
          make_save_switch_action, make_hold_action, make_release_action, make_requeue_action,
          make_drain_action, make_undrain_action}) {
      auto a = make();
      std::string name = a->name();
      m.emplace(name, std::move(a));
    }
    return m;
  }();
  return registry;
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

#pragma once
// Every action by name. An action's own file registers it (LLMWATCH_REGISTER_ACTION), which
// also puts its description in the catalogue (config/action_catalogue.h): a new action is
// that one file, and no list of names is kept anywhere else.
#include <memory>
#include <string>
#include <vector>

#include "action.h"

namespace llmwatch {

ActionPlugin* find_action(const std::string& name);
std::vector<std::string> action_names();

// Called at static initialisation by LLMWATCH_REGISTER_ACTION; returns true.
bool register_action(std::unique_ptr<ActionPlugin> plugin);

#define LLMWATCH_ACTION_CONCAT_(a, b) a##b
#define LLMWATCH_ACTION_CONCAT(a, b) LLMWATCH_ACTION_CONCAT_(a, b)
#define LLMWATCH_REGISTER_ACTION(expr)                                                         \
  [[maybe_unused]] static const bool LLMWATCH_ACTION_CONCAT(registered_action_, __COUNTER__) = \
      ::llmwatch::register_action(expr)

}  // namespace llmwatch

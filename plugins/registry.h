#pragma once
// All actions by name. A new action is one new file plus one line in registry.cpp.
#include <memory>
#include <string>
#include <vector>

#include "action.h"

namespace llmwatch {

ActionPlugin* find_action(const std::string& name);
std::vector<std::string> action_names();

}  // namespace llmwatch

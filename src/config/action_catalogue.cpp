#include "config/action_catalogue.h"

#include "util/catalogue.h"

namespace llmwatch {
namespace {
using Actions = Catalogue<ActionInfo, &ActionInfo::name>;
}  // namespace

void add_action_info(ActionInfo info) {
  Actions::add(std::move(info));
}

std::vector<ActionInfo> action_catalogue() {
  return Actions::all();
}

std::vector<std::string> action_names_for(ActionTarget target) {
  std::vector<std::string> out;
  for (const auto& a : action_catalogue())
    if (a.target == target) out.push_back(a.name);
  return out;
}

}  // namespace llmwatch

#pragma once
// What llmwatch can do: one entry per action plugin, registered by the plugin's own file
// (plugins/registry.h, LLMWATCH_REGISTER_ACTION). Config validation (which names an on_* list
// may hold), the CLI's manual verbs and `llmwatch actions` all read this one list, so a new
// action is one new file: no list of names is kept by hand anywhere else.
// It lives in config/ (the lowest layer that needs it) and holds descriptions only; the
// plugins themselves stay in plugins/.
#include <string>
#include <vector>

namespace llmwatch {

// Storage: acts on a [[storage]] path (checkpoint cleanup); planned by the storage check,
// never named in an on_* list. Self: llmwatch's own job chain (its successor); planned by
// the self-chain check, never named in an on_* list either.
enum class ActionTarget { Job, Node, Storage, Self };

struct ActionInfo {
  std::string name;
  ActionTarget target = ActionTarget::Job;
  std::string help;     // one line, for --help, `llmwatch actions` and the docs
  bool manual = false;  // offered as a verb: `llmwatch NAME JOB`
};

void add_action_info(ActionInfo info);
std::vector<ActionInfo> action_catalogue();  // sorted by name
// The names an on_* list of that target may hold.
std::vector<std::string> action_names_for(ActionTarget target);

}  // namespace llmwatch

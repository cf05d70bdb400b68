#include "slurm/srun_label.h"

#include <cctype>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

namespace llmwatch {
namespace {

// "12: text" (or " 7: text", padded to the widest task number; "12: " alone for an empty line):
// the task and what follows its label; nullopt for a line that carries none.
std::optional<std::pair<int, std::string_view>> labelled_line(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  std::size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == digits || i - digits > 7 || i >= line.size() || line[i] != ':') return std::nullopt;
  int task = 0;
  for (std::size_t k = digits; k < i; ++k) task = task * 10 + (line[k] - '0');
  std::string_view text = line.substr(i + 1);
  if (text.empty()) return std::make_pair(task, text);
  if (text[0] != ' ') return std::nullopt;
  return std::make_pair(task, text.substr(1));
}

}  // namespace

std::vector<std::string> srun_task_outputs(const std::string& labelled) {
  std::map<int, std::string> tasks;
  bool any = false;
  std::string_view rest = labelled;
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    auto l = labelled_line(line);
    if (!l) continue;
    any = true;
    std::string& out = tasks[l->first];
    out.append(l->second);
    out += '\n';
  }
  if (!any) return {labelled};
  std::vector<std::string> out;
  for (auto& [task, text] : tasks) out.push_back(std::move(text));
  return out;
}

std::string srun_output_by_task(const std::string& labelled) {
  std::string out;
  for (const auto& text : srun_task_outputs(labelled)) out += text;
  return out;
}

}  // namespace llmwatch

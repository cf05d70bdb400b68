// The part of a text we do not control that a std::regex may see.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmwatch {

// libstdc++'s std::regex matches by recursion, a few stack frames for each character a repeat
// consumes: one line of some hundred KiB (a dumped tensor in a training log, a progress bar
// that never ends its line) overflowed the stack and killed the process, every cycle. So no
// regex ever sees more than this many bytes of a log, a command's output or a kernel line;
// the lines we look for (steps, Xids, quota rows) are far shorter.
inline constexpr std::size_t kRegexWindow = 1024;

inline std::string_view regex_window(std::string_view text) {
  return text.substr(0, kRegexWindow);
}

}  // namespace llmwatch

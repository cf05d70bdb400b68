#pragma once
// A timespec (a file's mtime, a clock reading) as seconds, with its nanoseconds: the hang rule
// clocks a step at the log's write, and whole seconds cost up to one of them (#30).
#include <ctime>

namespace llmwatch {

inline double seconds_of(const timespec& ts) {
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace llmwatch

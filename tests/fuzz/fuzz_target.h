// Which target a fuzzer executable runs: one executable per source file serves all of that
// file's targets (linking one per target made 15 sanitizer executables, a quarter of the
// sanitizer build's CPU). Its ctest sets LLMWATCH_FUZZ_TARGET to the target's number.
// Include it from one source file per executable: it defines libFuzzer's LLVMFuzzerInitialize.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace llmwatch::fuzz {

inline int target() {
  static const int chosen = [] {
    const char* v = std::getenv("LLMWATCH_FUZZ_TARGET");
    int n = v ? std::atoi(v) : 0;
    if (n <= 0) {
      std::fprintf(
          stderr,
          "fuzz: set LLMWATCH_FUZZ_TARGET to a target's number (tests/fuzz/CMakeLists.txt)\n");
      std::exit(2);
    }
    return n;
  }();
  return chosen;
}

// A number this executable does not serve: a wrong CMakeLists line, never a finding.
[[noreturn]] inline void unknown_target() {
  std::fprintf(stderr, "fuzz: this executable has no target %d\n", target());
  std::exit(2);
}

}  // namespace llmwatch::fuzz

// libFuzzer calls this before the first input: a missing number is then an error, not a
// "crash" input. Not inline: an inline one unused in its file is never emitted, and libFuzzer
// finds it by its symbol.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)llmwatch::fuzz::target();
  return 0;
}

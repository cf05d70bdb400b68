// libFuzzer target: whole cycles of the real Supervisor from fuzzed squeue, log and clock
// input (tests/helpers/cycle_driver.h); aborts when a property is violated.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cycle_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  char dir[] = "/tmp/llmwatch-fuzz-cycle-XXXXXX";
  if (!mkdtemp(dir)) return 0;
  std::string violation = llmwatch::testing::drive_cycles(data, size, dir);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!violation.empty()) {
    std::fprintf(stderr, "property violated: %s\n", violation.c_str());
    std::abort();
  }
  return 0;
}

// libFuzzer targets for the Slurm parsers. The environment's LLMWATCH_FUZZ_TARGET picks which
// one a run fuzzes (fuzz_target.h, tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"
#include "slurm/slurm_text.h"

using namespace llmwatch;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  switch (fuzz::target()) {
    case 1: {
      auto p = parse_squeue_json(text);
      for (const auto& j : p.jobs) (void)slurm_job_from_json(slurm_job_to_json(j));
      // Property: read in pieces as squeue prints it (cut at a size the input picks), the
      // answer is the same as read whole.
      SqueueJsonReader reader;
      std::size_t piece = size ? 1 + data[0] % 97 : 1;
      for (std::size_t i = 0; i < size; i += piece) reader.feed(text.substr(i, piece));
      auto q = reader.finish();
      if (q.ok() != p.ok() || q.error != p.error || q.jobs.size() != p.jobs.size())
        __builtin_trap();
      for (std::size_t i = 0; i < q.jobs.size(); ++i)
        if (slurm_job_to_json(q.jobs[i]) != slurm_job_to_json(p.jobs[i])) __builtin_trap();
      break;
    }
    case 2: {
      (void)parse_sinfo_json(text);
      break;
    }
    case 3: {
      (void)parse_squeue_text(text);
      break;
    }
    case 4: {
      (void)parse_sinfo_text(text);
      break;
    }
    case 5: {
      (void)parse_scontrol_show(text);
      break;
    }
    case 6: {
      // Round trip: what expands must compress to something that expands to the same set of
      // hosts (compression merges duplicates, which "[1-4,4]" produces).
      if (auto hosts = expand_hostlist(text); hosts && hosts->size() < 100000) {
        auto again = expand_hostlist(compress_hostlist(*hosts));
        if (!again) __builtin_trap();
        std::set<std::string> a(hosts->begin(), hosts->end()), b(again->begin(), again->end());
        if (a != b) __builtin_trap();
      }
      break;
    }
    default:
      fuzz::unknown_target();
  }
  return 0;
}

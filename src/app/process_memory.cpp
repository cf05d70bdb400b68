#include "app/process_memory.h"

#include <malloc.h>

#include <cstdlib>

// jemalloc's options where it is linked in (CMakeLists.txt: llmwatch_allocator): one arena, for
// the reason glibc's is limited to one below (each worker thread's own arena was left half used).
// Its per-thread caches keep the workers off the arena's lock, which glibc's one arena made them
// wait on. MALLOC_CONF in the environment is read after this: an operator's choice wins.
extern "C" {
// NOLINTNEXTLINE: the name jemalloc reads
[[gnu::used]] const char* malloc_conf = "narenas:1";
}

namespace llmwatch {

void limit_malloc_arenas() {
  // MALLOC_ARENA_MAX in the environment wins: an operator's choice is kept.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
}

}  // namespace llmwatch

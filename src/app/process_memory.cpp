#include "app/process_memory.h"

#include <malloc.h>

#include <cstdlib>

namespace llmwatch {

void limit_malloc_arenas() {
  // MALLOC_ARENA_MAX in the environment wins: an operator's choice is kept.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
}

}  // namespace llmwatch

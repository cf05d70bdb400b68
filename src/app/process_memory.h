#pragma once
// How llmwatch's process uses memory. glibc gives each thread that allocates an arena of its
// own (up to 8 per core); a cycle's worker threads (log reads, deadline calls, checks) each
// left one half-used: 40 MiB of the cycle's 81 at 1,000 watched jobs (make bench). One arena
// measured no slower (the threads mostly wait on files), and the cycle peaks at 42 MiB. The
// shipped executable allocates with jemalloc (process_memory.cpp sets it to one arena too):
// glibc's one arena had the workers wait on its lock, and the cycle took 29 % less CPU.
namespace llmwatch {

void limit_malloc_arenas();

}  // namespace llmwatch

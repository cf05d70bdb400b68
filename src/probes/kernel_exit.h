#pragma once
// Whether a process is on its way out in the kernel (#30), read from /proc alone: no gdb, which
// a node may not have and which cannot stop such a process to read it (its threads are in the
// kernel, not at a point where a signal stops them): attached to a python3 writing a 6 GiB
// core, gdb waited the whole 18 s of the dump and then said "Unable to attach".
// - A rank killed by PyTorch's watchdog (SIGABRT) with core dumps on stays in the kernel while
//   its core is written, which for a process mapping tens of GiB takes long; its memory, and
//   with it the environment that names its rank, is still there.
// - A CUDA process's exit can take seconds in the kernel, and far longer on a faulted GPU: the
//   driver tears down its contexts as its memory and files are released. Where slurmd still
//   lists it as the job's (that depends on how slurmd tracks processes; this project's
//   proctrack/linuxproc leaves a zombie out), its environment can no longer be read, so the
//   look saw a Python process naming no rank, which is what a launcher looks like.
// Either way no step comes from it again: the kernel gives no process back once its exit or
// its core dump has begun.
#include <string>
#include <vector>

namespace llmwatch {

// One thread of a process, as /proc/PID/task/TID/stat and .../status show it.
struct ThreadExitState {
  char state = '?';           // stat's third field: 'Z' (zombie), 'X' (dead), 'D', 'S', ...
  unsigned long flags = 0;    // stat's ninth field, the kernel's PF_* flags
  bool kill_pending = false;  // SIGKILL in SigPnd (the thread's) or ShdPnd (the process's)
  bool core_dumping = false;  // status's CoreDumping: 1 (Linux 4.15 on): its memory is being dumped
  // Past the point of no return: exited and not reaped, in do_exit (PF_EXITING), past a core
  // dump (PF_POSTCOREDUMP), or with a SIGKILL it cannot block or catch pending.
  bool doomed() const;
};

// A thread's stat and status text; nullopt-like `state` '?' where stat is not one (a thread
// that went away between the listing and the read reads as empty).
ThreadExitState parse_thread_exit_state(const std::string& stat, const std::string& status);

// The process whose threads these are (its main thread first) is exiting in the kernel:
// "do_coredump" where its memory is being dumped, "do_exit" where every thread is doomed
// (one thread of many ending, a main thread that called pthread_exit, is not the process's
// end); "" otherwise, and where no thread could be read.
std::string kernel_exit(const std::vector<ThreadExitState>& threads);

// The same, for process `pid` as /proc shows it now; read only where its main thread is
// doomed or dumping (one stat and one status for a process that runs).
std::string process_kernel_exit(int pid);

}  // namespace llmwatch

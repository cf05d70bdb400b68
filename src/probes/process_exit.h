#pragma once
// Whether a process is on its way out though it is still there (#30): its main thread in
// CPython's Py_FinalizeEx, where the interpreter goes once the program has ended (an exception
// raised to the top, sys.exit) to join its non-daemon threads, run its atexit handlers and free
// its modules, or past it in libc's exit(), which runs the C and C++ exit handlers and static
// destructors (CUDA's and NCCL's teardown among them). Each can hang: a rank whose NCCL error
// was raised to Python and left it, lingering in a thread join or a process group's
// destructor, steps no more. Seen in gdb's native backtrace of the main thread, by the names
// of exported symbols (libpython's, libc's), which gdb shows with or without debug symbols; a
// frame the unwinder never reached proves nothing, so only a frame seen counts.
#include <string>

#include "config/config.h"

namespace llmwatch {

// The frame of a gdb backtrace ("#20 0x... in Py_FinalizeEx () at ...") that says the process
// is exiting: "Py_FinalizeEx" (3.6 and later), "_Py_Finalize" (3.13), "Py_Exit", libc's "exit"
// (with its debug symbols "__GI_exit", and "__run_exit_handlers" under it); "" where none does.
std::string exiting_frame(const std::string& backtrace);

// gdb's backtrace of `pid`'s main thread (as its owner, python_stacks.h's gdb_identity_for),
// read for such a frame: "" where none was seen, gdb could not attach or ran past `timeout`.
std::string main_thread_exiting(int pid, Seconds timeout);

}  // namespace llmwatch

#pragma once
// Whether a process's Python interpreter is on its way out (#30): its main thread in
// Py_FinalizeEx, where CPython goes once the program has ended (an exception raised to the top,
// sys.exit) to wait for its non-daemon threads, run its atexit handlers and free its modules,
// each of which can hang: a rank whose NCCL error was raised to Python and left it, lingering
// in a thread join or a process group's destructor, goes on with no step. Seen in gdb's native
// backtrace of the main thread (CPython's own symbols: libpython's exported names, or the
// python3.X-dbg symbols where installed); a frame the unwinder never reached proves nothing,
// so only the frame seen counts.
#include <string>

#include "config/config.h"

namespace llmwatch {

// The frame of a gdb backtrace ("#20 0x... in Py_FinalizeEx () at ...") that says the
// interpreter is finalizing: "Py_FinalizeEx" (3.6 and later), "_Py_Finalize" (3.13), "Py_Exit";
// "" where no frame does.
std::string finalizing_frame(const std::string& backtrace);

// gdb's backtrace of `pid`'s main thread (as its owner, python_stacks.h's gdb_identity_for),
// read for such a frame: "" where none was seen, gdb could not attach or ran past `timeout`.
std::string main_thread_finalizing(int pid, Seconds timeout);

}  // namespace llmwatch

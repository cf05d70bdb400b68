#pragma once
// The process a caller waits on is not the one that does the work.
//
// A read on a dead NFS, Lustre or FUSE mount blocks its thread in the kernel, where no signal
// reaches it. call_with_deadline (util/deadline_call.h) leaves such a thread behind so that the
// cycle goes on; but a process cannot finish exiting while one of its threads is in the kernel,
// so `run --once` would keep cron, the self-job's batch script or a shell waiting for as long as
// the mount hung, and a daemon told to stop would not stop.
//
// So `run` and `daemon` do their work in a forked worker, which hands its exit code to the
// parent through a pipe before it starts to exit; the parent returns that code at once. A
// worker still blocked lingers holding nothing: the lease given back, the store closed, its
// stdout and stderr on /dev/null. It ends when the mount answers, or with the parent's death.
#include <functional>

namespace llmwatch {

// Runs work() in a forked worker and returns its exit code (128 + signal when it died of one).
// SIGTERM, SIGINT and SIGHUP sent to the parent are passed on to the worker. Call it before any
// thread is started: only the forking thread exists in the worker.
int run_in_worker(const std::function<int()>& work);

// From inside the worker: hands `code` to the waiting parent now, before an exit that may
// block. The first call wins; outside a worker it does nothing.
void report_exit_code(int code);

}  // namespace llmwatch

#pragma once
// When the daemon should look again before its next tick (#30): the earliest moment a watched
// job's hang allowance runs out, as its progress and allowance stood after the last cycle. A
// hang is then found at the allowance, not up to a whole interval later. Likewise when a hang's
// second dump (confirm_hang) is due, and when the look for a fatal line's rank is (#30:
// rank_look_due in rules/job_progress.h).
#include <optional>

#include "config/config.h"

namespace llmwatch {

class Store;

// How long past a job's hang deadline its wake looks: the allowance must have run out (a hang is
// idle time *over* the allowance), and a steady timer never fires early. It was one second: a
// hang was found 46 s after a 45 s allowance began.
inline constexpr double kWakePastDeadline = 0.02;

// The earliest time (Unix seconds), `now` at the soonest, at which a running job's allowance
// runs out or its hang's second dump is due; nullopt when none would before `before`.
// `looked_at`: when the last cycle judged the jobs (its clock). A deadline that ran out between
// that look and now was not acted on by it: the wake is now, not the next tick (#30: a dying
// task's 8 s ran out while the cycle brought forward by its crash line ran, and the hang was
// found 30 s late). One that had run out by the look was that cycle's to find.
std::optional<double> earliest_hang_deadline(const Config& config, Store& store, double looked_at,
                                             double now, double before);

}  // namespace llmwatch

#pragma once
// When the daemon should look again before its next tick (#30): the earliest moment a watched
// job's hang allowance runs out, as its progress and allowance stood after the last cycle. A
// hang is then found at the allowance, not up to a whole interval later. Likewise when a hang's
// second dump (confirm_hang) is due.
#include <optional>

#include "config/config.h"

namespace llmwatch {

class Store;

// How long past a job's hang deadline its wake looks: the allowance must have run out (a hang is
// idle time *over* the allowance), and a steady timer never fires early. It was one second: a
// hang was found 46 s after a 45 s allowance began.
inline constexpr double kWakePastDeadline = 0.02;

// The earliest time (Unix seconds) after `now` at which a running job's allowance runs out or
// its hang's second dump is due; nullopt when none would before `before`.
std::optional<double> earliest_hang_deadline(const Config& config, Store& store, double now,
                                             double before);

}  // namespace llmwatch

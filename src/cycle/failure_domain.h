#pragma once
// A failure domain: one job's evaluation, one check, one channel's delivery, one phase.
// Whatever goes wrong inside (an exception from a parser, SQLite, the JSON library, a full
// disk) stays inside: it becomes that domain's error, and everything else carries on. No
// exception ever leaves a pool thread or stops the cycle record and the alert flush.
#include <exception>
#include <string>

#include "util/result.h"

namespace llmwatch {

// Runs fn; fails with what went wrong, prefixed with the domain, when it threw.
template <class Fn>
Status run_guarded(const std::string& domain, Fn&& fn) noexcept {
  try {
    fn();
    return {};
  } catch (const std::exception& e) {
    return Error{domain + ": " + e.what()};
  } catch (...) {
    return Error{domain + ": unknown exception"};
  }
}

}  // namespace llmwatch

#pragma once
// The one way an expected failure is reported: a Result holds a value or an error, and a Status
// is the same for work that returns nothing. The error is one line that says what failed and
// where it came from (file:line, command, node), ready for a log, an event or `config check`.
//
// Exceptions are for broken invariants (value() of a failed Result) and for the libraries that
// throw (SQLite, JSON, the allocator). They never cross a failure domain: run_guarded
// (cycle/failure_domain.h) turns them into a Status there, like any other failure.
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace llmwatch {

// The error half, so that `return Error{"..."};` fits any Result and a Status.
struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as `return value;` reads
  Result(Error e) : error_(e.message.empty() ? "failed" : std::move(e.message)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // A failed Result has no value: asking for one is a broken invariant, and throws.
  const T& value() const& { return checked(); }
  T& value() & { return checked(); }
  T&& value() && { return std::move(checked()); }
  const T& operator*() const& { return checked(); }
  T& operator*() & { return checked(); }
  T&& operator*() && { return std::move(checked()); }
  const T* operator->() const { return &checked(); }
  T* operator->() { return &checked(); }
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }
  T value_or(T fallback) && { return ok() ? std::move(*value_) : std::move(fallback); }
  const std::string& error() const { return error_; }  // "" when ok

  friend bool operator==(const Result& r, const T& v) { return r.ok() && *r.value_ == v; }

 private:
  const T& checked() const {
    if (!value_) throw std::logic_error("value of a failed result: " + error_);
    return *value_;
  }
  T& checked() {
    if (!value_) throw std::logic_error("value of a failed result: " + error_);
    return *value_;
  }
  std::optional<T> value_;
  std::string error_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;                                                               // success
  Status(Error e) : error_(e.message.empty() ? "failed" : std::move(e.message)) {}  // NOLINT
  bool ok() const { return error_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return error_; }  // "" when ok

 private:
  std::string error_;
};

}  // namespace llmwatch

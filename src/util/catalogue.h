#pragma once
// A list of named entries that plugins add to during static initialisation, in any order, and
// that the rest of llmwatch reads sorted by name. Keeps the "function-local static plus a
// mutex" idiom of every registry in one place (the action and channel catalogues use it).
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

namespace llmwatch {

// Name(entry) gives an entry's name; a second entry of the same name replaces the first.
template <class T, std::string T::*Name>
class Catalogue {
 public:
  static void add(T entry) {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    auto& all = s.entries;
    all.erase(
        std::remove_if(all.begin(), all.end(), [&](const T& e) { return e.*Name == entry.*Name; }),
        all.end());
    all.push_back(std::move(entry));
    std::sort(all.begin(), all.end(), [](const T& a, const T& b) { return a.*Name < b.*Name; });
  }
  static std::vector<T> all() {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    return s.entries;
  }

 private:
  struct State {
    std::mutex mutex;
    std::vector<T> entries;
  };
  // Function-local: registration from any file's static initialiser finds it constructed.
  static State& state() {
    static State s;
    return s;
  }
};

}  // namespace llmwatch

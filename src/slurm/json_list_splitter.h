#pragma once
// Splits a Slurm --json document, fed in pieces as squeue prints it, into the elements of
// one top-level list ("jobs", "nodes") and the rest of the document. Each element is handed
// on whole as soon as it is complete, so a 239 MiB `squeue --json` (100,000 jobs) is parsed
// without ever being held in memory: only the element being read is buffered. The rest
// (meta, errors) keeps the list as an empty "[]", so it stays a small valid document.
//
// Only the nesting is tracked (strings and their escapes, braces, brackets): whether each
// piece is valid JSON is for the parser of the element and of the rest to say.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace llmwatch {

class JsonListSplitter {
 public:
  // `element` gets each element's text. It may read up to `padding` bytes past its end (a
  // SIMD parser does): the view is followed by that many zero bytes. It returns false to stop
  // (a malformed element): finish() then says so.
  using Element = std::function<bool(std::string_view text)>;
  JsonListSplitter(std::string list, std::size_t padding, Element element);

  void feed(std::string_view piece);
  // Fails, saying why, unless the document ended complete. rest() is then the document
  // without the list's elements.
  Status finish();
  const std::string& rest() const { return rest_; }
  bool saw_list() const { return saw_list_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void hand_on(std::string_view text);

  std::string list_, key_quoted_;
  std::size_t padding_;
  Element element_;

  std::string rest_;         // the document outside the list's elements
  std::string partial_;      // an element cut by the end of a piece
  std::string element_buf_;  // the element handed on, followed by zero padding
  std::string last_key_;     // the last string closed at depth 1 (a key, when ':' follows)
  std::string current_string_;
  bool collecting_string_ = false;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
  bool in_list_ = false;   // inside the list's brackets
  int element_depth_ = 0;  // > 0: inside an element
  bool saw_list_ = false, stopped_ = false;
  std::size_t bytes_ = 0;
};

}  // namespace llmwatch

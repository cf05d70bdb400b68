#include "slurm/json_list_splitter.h"

namespace llmwatch {

JsonListSplitter::JsonListSplitter(std::string list, std::size_t padding, Element element)
    : list_(std::move(list)), padding_(padding), element_(std::move(element)) {}

void JsonListSplitter::hand_on(std::string_view text) {
  if (stopped_) return;
  // Always a copy followed by zeros, never the bytes that happen to follow the element: a
  // lazy parser's verdict on a malformed element may depend on what its read-ahead sees, and
  // the answer must not depend on where the pipe cut the document (a fuzz property found
  // one that did). A copy of each job is ~1/10 of a parse.
  element_buf_.assign(text);
  element_buf_.append(padding_, '\0');
  stopped_ = !element_(std::string_view(element_buf_.data(), text.size()));
}

void JsonListSplitter::feed(std::string_view piece) {
  bytes_ += piece.size();
  const char* p = piece.data();
  const std::size_t n = piece.size();
  // Where the element being read began in this piece; npos: in an earlier one (in partial_).
  constexpr std::size_t npos = std::string_view::npos;
  std::size_t element_start = npos;
  std::size_t rest_from = 0;  // start of a run kept in rest_
  auto keep_rest = [&](std::size_t to) {
    if (to > rest_from) rest_.append(p + rest_from, to - rest_from);
  };
  for (std::size_t i = 0; i < n; ++i) {
    char c = p[i];
    if (in_string_) {
      // Most bytes are inside strings: skip to the next quote or backslash.
      if (!escaped_) {
        std::size_t j = i;
        while (j < n && p[j] != '"' && p[j] != '\\') ++j;
        if (collecting_string_) current_string_.append(p + i, j - i);
        i = j;
        if (i == n) break;
        c = p[i];
      }
      if (escaped_) {
        escaped_ = false;
        if (collecting_string_) current_string_ += c;
      } else if (c == '\\') {
        escaped_ = true;
        if (collecting_string_) current_string_ += c;
      } else {  // the closing quote
        in_string_ = false;
        if (collecting_string_) {
          collecting_string_ = false;
          last_key_ = std::move(current_string_);
          current_string_.clear();
        }
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        // Strings at the top level are the keys that name the list.
        if (depth_ == 1 && !in_list_) {
          collecting_string_ = true;
          current_string_.clear();
        }
        break;
      case '{':
      case '[':
        if (in_list_ && depth_ == 2 && c == '{') {
          element_depth_ = 1;
          element_start = i;
        } else if (element_depth_ > 0) {
          ++element_depth_;
        } else if (!in_list_ && depth_ == 1 && c == '[' && last_key_ == list_) {
          keep_rest(i + 1);  // the list's "[": its elements are handed on, not kept
          in_list_ = saw_list_ = true;
        }
        ++depth_;
        break;
      case '}':
      case ']':
        --depth_;
        if (element_depth_ > 0 && --element_depth_ == 0) {
          if (element_start != npos) {
            hand_on(std::string_view(p + element_start, i + 1 - element_start));
          } else {
            partial_.append(p, i + 1);
            hand_on(partial_);
          }
          partial_.clear();
        } else if (in_list_ && depth_ == 1) {
          in_list_ = false;
          rest_from = i;  // the list's "]" is kept
        }
        break;
      default:
        break;
    }
    if (depth_ == 1 && !in_list_ && c == ',') last_key_.clear();
  }
  if (element_depth_ > 0) {
    // An element goes on in the next piece.
    if (element_start != npos)
      partial_.append(p + element_start, n - element_start);
    else
      partial_.append(p, n);
  }
  if (!in_list_) keep_rest(n);
}

Status JsonListSplitter::finish() {
  if (stopped_) return Error{"not valid JSON"};
  if (bytes_ == 0) return Error{"no output"};
  if (depth_ != 0 || in_string_ || element_depth_ > 0) return Error{"the document was cut short"};
  return {};
}

}  // namespace llmwatch

#include "util/json_writer.h"

#include <charconv>
#include <cmath>

#include "util/text.h"

namespace llmwatch {

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_) out_ += ',';
  first_ = false;
}

JsonWriter& JsonWriter::open(char bracket) {
  if (out_.empty()) out_.reserve(4096);  // a job's progress is 2-4 KiB: one allocation
  separate();
  out_ += bracket;
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  out_ += bracket;
  first_ = false;  // the enclosing object or array now has a value
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  value(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  // Almost every string is valid already: copy only when it is not.
  std::string repaired;
  if (!is_valid_utf8(s)) {
    repaired = valid_utf8(s);
    s = repaired;
  }
  out_ += '"';
  static constexpr char kHex[] = "0123456789abcdef";
  // Runs of plain characters are copied whole; only quotes, backslashes and control
  // characters are written one by one.
  size_t plain = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u != '"' && u != '\\') continue;
    out_.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (u) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        out_ += "\\u00";
        out_ += kHex[u >> 4];
        out_ += kHex[u & 15];
    }
  }
  out_.append(s.data() + plain, s.size() - plain);
  out_ += '"';
  return *this;
}

// to_chars: no locale, and for a double the shortest form that reads back exactly.
template <class T>
JsonWriter& JsonWriter::number(T n) {
  separate();
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  return std::isfinite(d) ? number(d) : null();
}

JsonWriter& JsonWriter::value(std::int64_t i) {
  return number(i);
}

JsonWriter& JsonWriter::value(std::uint64_t u) {
  return number(u);
}

JsonWriter& JsonWriter::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

}  // namespace llmwatch

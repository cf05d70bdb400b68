#pragma once
// Writes one JSON document straight into a string, for state written every cycle (a job's
// progress: 1,000 of them a cycle at cluster scale). Building an nlohmann::json object first
// cost a sixth of a cycle's CPU. Strings are made valid UTF-8 (as json_dump does) and
// escaped; a number that is not finite is written as null, as nlohmann does.
#include <cstdint>
#include <string>
#include <string_view>

namespace llmwatch {

class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(std::int64_t i);
  JsonWriter& value(std::uint64_t u);
  JsonWriter& value(int i) { return value(static_cast<std::int64_t>(i)); }
  JsonWriter& value(bool b);
  JsonWriter& null();
  // A value written as JSON already (a part made once and kept), copied as it is: the caller
  // vouches that it is one complete, valid JSON value.
  JsonWriter& raw(std::string_view json);

  // The document so far; complete once every object and array is closed.
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void separate();
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);
  template <class T>
  JsonWriter& number(T n);
  std::string out_;
  bool first_ = true;  // no value yet in the innermost object or array
  bool after_key_ = false;
};

}  // namespace llmwatch

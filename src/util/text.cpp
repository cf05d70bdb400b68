#include "util/text.h"

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

namespace llmwatch {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one
// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
size_t sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // the range allowed for the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return len;
}

}  // namespace

// Logs are almost all ASCII: 8 bytes at a time until the first byte with its high bit set,
// so the common case costs a load and a mask per word instead of a decode per byte.
size_t ascii_prefix(std::string_view bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    if (word & 0x8080808080808080ULL) break;
  }
  while (i < bytes.size() && !(static_cast<unsigned char>(bytes[i]) & 0x80)) ++i;
  return i;
}

bool is_valid_utf8(std::string_view bytes) {
  for (size_t i = ascii_prefix(bytes); i < bytes.size();) {
    size_t n = sequence_length(bytes, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view bytes) {
  size_t ascii = ascii_prefix(bytes);
  if (ascii == bytes.size()) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size());
  out.append(bytes.substr(0, ascii));
  for (size_t i = ascii; i < bytes.size();) {
    size_t n = sequence_length(bytes, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string truncate_utf8(std::string_view text, size_t max_bytes) {
  std::string valid = valid_utf8(text);
  if (valid.size() <= max_bytes) return valid;
  size_t cut = max_bytes;
  // Back up over continuation bytes to the start of the character that did not fit.
  while (cut > 0 && (static_cast<unsigned char>(valid[cut]) & 0xC0) == 0x80) --cut;
  valid.resize(cut);
  return valid;
}

std::string terminal_safe(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string valid = valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  auto escape = [&](unsigned int code) {
    out += "\\x";
    out += kHex[(code >> 4) & 0xF];
    out += kHex[code & 0xF];
  };
  for (size_t i = 0; i < valid.size(); ++i) {
    auto u = static_cast<unsigned char>(valid[i]);
    if ((u < 0x20 && u != '\t') || u == 0x7F) {
      escape(u);
    } else if (u == 0xC2 && i + 1 < valid.size() &&
               static_cast<unsigned char>(valid[i + 1]) < 0xA0) {
      // C1 controls U+0080..U+009F (CSI among them) are encoded C2 80..C2 9F.
      escape(static_cast<unsigned char>(valid[++i]));
    } else {
      out += valid[i];
    }
  }
  return out;
}

nlohmann::json terminal_safe_json(const nlohmann::json& j) {
  if (j.is_string()) return terminal_safe(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(terminal_safe_json(v));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[terminal_safe(k)] = terminal_safe_json(v);
    return out;
  }
  return j;
}

std::string slack_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '&') {
      // Idempotent: an entity we wrote earlier stays as it is.
      std::string_view rest = text.substr(i);
      if (rest.rfind("&amp;", 0) == 0 || rest.rfind("&lt;", 0) == 0 || rest.rfind("&gt;", 0) == 0)
        out += c;
      else
        out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string json_dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace llmwatch

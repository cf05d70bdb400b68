#pragma once
// The text boundary. Every byte that comes from outside llmwatch (training logs, Slurm
// output, a command's stderr, node and job names) passes through here before it reaches
// the store, JSON, an alert, a metric label or a terminal:
// - valid_utf8: invalid sequences become U+FFFD, so no JSON dump can fail on content;
// - truncate_utf8: cuts only on a character boundary, so truncation cannot create an
//   invalid sequence;
// - terminal_safe: control characters (C0, DEL, C1, hence every escape sequence) are shown
//   as \xNN instead of being interpreted by the operator's terminal;
// - slack_escape: Slack's three control characters, so `<!channel>` in a job name is text.
// Each is idempotent: applying it twice changes nothing.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace llmwatch {

std::string valid_utf8(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);
// At most max_bytes of valid UTF-8, cut before a character that does not fit whole.
std::string truncate_utf8(std::string_view text, size_t max_bytes);
std::string terminal_safe(std::string_view text);
// A copy of a document with terminal_safe applied to every string (keys too): views render
// from it, so their own colour codes are the only escape sequences they print.
nlohmann::json terminal_safe_json(const nlohmann::json& j);
std::string slack_escape(std::string_view text);
// Serializes JSON without ever throwing on content: invalid UTF-8 in a string is replaced.
std::string json_dump(const nlohmann::json& j, int indent = -1);

}  // namespace llmwatch

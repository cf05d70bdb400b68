#pragma once
// Small string helpers shared by parsers and views.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmwatch {

std::string_view trim(std::string_view s);
std::vector<std::string> split(std::string_view s, char sep);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
bool contains(std::string_view s, std::string_view part);
// "a, b, c": the parts with sep between them.
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// A whole decimal (or, base 16, hex) integer that fits; nullopt for anything else, including
// overflow: parsers of external output must never throw on a 30-digit "job id".
std::optional<std::int64_t> to_int64(std::string_view s, int base = 10);
// A whole finite decimal number ("1800000055.250000"); nullopt for anything else.
std::optional<double> to_double(std::string_view s);

// Edit distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word`, or "" when none is close enough to be a likely typo.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
// Expands ${NAME} from the environment; unknown names are reported through *missing.
std::string expand_env(std::string_view text, std::vector<std::string>* missing);
// Replaces control bytes so that untrusted text (log lines) is safe in a terminal or JSON.
std::string sanitize_line(std::string_view s, size_t max_len = 400);

}  // namespace llmwatch

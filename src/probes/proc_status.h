#pragma once
// A field of /proc/PID/status ("PPid:\t1974", "CoreDumping:\t1"): what the rank look reads of a
// process besides its environment (its parent, whether it is exiting).
#include <string_view>

namespace llmwatch {

// The value of the line "Key:<tabs>value" of `status`, trimmed; "" where there is none.
std::string_view proc_status_value(std::string_view status, std::string_view key);

}  // namespace llmwatch

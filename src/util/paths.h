#pragma once
// Where llmwatch finds its own shipped files (conf/, slurm/, examples/): next to an installed
// binary (share/llmwatch), else the source tree it was built from.
#include <string>

namespace llmwatch {

// The directory holding conf/, slurm/, examples/; $LLMWATCH_DATADIR overrides.
std::string data_dir();
// The running executable's absolute path (for re-submitting itself as a Slurm job).
std::string self_exe();
std::string hostname();

}  // namespace llmwatch

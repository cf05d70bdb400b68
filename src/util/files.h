#pragma once
// Whole-file reads and crash-safe writes, for the small files llmwatch keeps (node-check
// results and state, the metrics textfile, tables).
#include <cstddef>
#include <optional>
#include <string>

#include "util/result.h"

namespace llmwatch {

// The file's bytes, or nullopt when it cannot be read.
std::optional<std::string> read_text_file(const std::string& path);
// The same, or why not: "cannot read '/etc/x.toml': No such file or directory". Every "cannot
// read" a person sees says why (#27).
Result<std::string> read_file_or_why(const std::string& path);

// Writes through a temporary file in the same directory and renames it over `path`, so a
// reader never sees half of it (a killed writer leaves only its temporary).
Status write_file_atomic(const std::string& path, const std::string& text);

// A directory (and its parents) only its owner may enter: 0700, made so before anything is
// put in it, without changing the process's umask (other threads write files meanwhile).
Status make_private_dir(const std::string& dir);
// write_file_atomic, then 0600: for files in a private directory that hold what a job's owner
// wrote (scripts, logs).
Status write_private_file(const std::string& path, const std::string& text);

// Removes all but the `keep` newest regular files of `dir` (by their last write): forensics
// llmwatch keeps (stacks, logs) must never fill the state directory.
void keep_newest_files(const std::string& dir, std::size_t keep);

}  // namespace llmwatch

// llmwatch's own leftovers: the copies of batch scripts it kept for restarts.
#include "cycle/housekeeping.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "slurm/script_file.h"
#include "store/kept_script.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

// A [[job]] that left the config, or whose row was forgotten: its copy (its owner's words)
// goes; a configured job's copy of its task stays, and so does nothing else.
TEST(Housekeeping, AKeptScriptNoConfiguredJobNamesIsRemoved) {
  testing::TempDir state;
  Store store(state.path);
  const std::string running = kept_script_path(state.path, "7@1700000000");
  const std::string gone_job = kept_script_path(state.path, "8@1700000000");
  const std::string earlier = kept_script_path(state.path, "6@1600000000");
  for (const auto& p : {running, gone_job, earlier})
    ASSERT_TRUE(write_script_copy(state.path, p, "#!/bin/sh\n"));
  put_kept_script(store, "train", {"7@1700000000", ""}, 0);
  put_kept_script(store, "left-the-config", {"8@1700000000", ""}, 0);
  EXPECT_EQ(remove_unnamed_kept_scripts(state.path + "/", store, {"train", "not-kept"}), 2);
  EXPECT_TRUE(std::filesystem::exists(running));
  EXPECT_FALSE(std::filesystem::exists(gone_job));
  EXPECT_FALSE(std::filesystem::exists(earlier));
  // Nothing kept yet: nothing to do.
  testing::TempDir empty;
  Store none(empty.path);
  EXPECT_EQ(remove_unnamed_kept_scripts(empty.path, none, {"train"}), 0);
}

}  // namespace
}  // namespace llmwatch

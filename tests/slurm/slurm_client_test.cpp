// SlurmClient against a stand-in squeue on PATH that prints what a real one can: a JSON
// document too big for the capture.
#include "slurm/slurm_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test_util.h"

namespace llmwatch {
namespace {

struct HugeSqueue {
  testing::TempDir dir;
  HugeSqueue() {
    // 70 MB of JSON (over the 64 MiB switch point), exit 0; the text form is small.
    testing::write_file(dir / "squeue",
                        "#!/bin/sh\n"
                        "if [ \"$1\" = \"--json\" ]; then\n"
                        "  printf '{\"jobs\":['; head -c 70000000 /dev/zero | tr '\\0' ' '; "
                        "printf ']}'\n"
                        "else\n"
                        "  echo '7|7|N/A|RUNNING|tr|alice|node-1|None|1:00|1:00:00|"
                        "2024-01-01T00:00:00'\n"
                        "fi\n");
    ::chmod((dir / "squeue").c_str(), 0755);
  }
  SlurmSettings settings(const std::string& format) {
    SlurmSettings s;
    s.bin_dir = dir.path;
    s.format = format;
    return s;
  }
};

// The defect: output over the 16 MiB capture cap was cut silently and trusted (a running
// job became "absent" and was resubmitted), and JSON over 16 MiB never parsed, so the
// 64 MiB switch to the text format could never fire.
TEST(SlurmClient, JsonTooBigSwitchesToTextAndIsNeverTrustedCut) {
  HugeSqueue fake;
  SlurmClient automatic(fake.settings("auto"));
  auto q = automatic.queue();
  ASSERT_TRUE(q.ok()) << q.error;
  EXPECT_TRUE(automatic.text_mode());
  ASSERT_EQ(q.jobs.size(), 1u);
  EXPECT_EQ(q.jobs[0].job_id, 7);

  SlurmClient json_only(fake.settings("json"));
  auto cut = json_only.queue();
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.error.find("not trusted"), std::string::npos) << cut.error;
  EXPECT_TRUE(cut.jobs.empty());
}

}  // namespace
}  // namespace llmwatch

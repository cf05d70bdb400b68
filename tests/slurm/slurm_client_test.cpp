// SlurmClient against a stand-in squeue on PATH that prints what a real one can: a JSON
// document too big for the capture.
#include "slurm/slurm_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test_util.h"

namespace llmwatch {
namespace {

// A stand-in squeue. Its JSON is 70 MB (over the 64 MiB switch point) with a job at the very
// end, so only a document read whole finds it; its text form names another job.
struct HugeSqueue {
  testing::TempDir dir;
  explicit HugeSqueue(const std::string& json_tail =
                          "{\"job_id\":8,\"name\":\"tr\","
                          "\"job_state\":\"RUNNING\"}]}") {
    testing::write_file(dir / "squeue",
                        "#!/bin/sh\n"
                        "if [ \"$1\" = \"--json\" ]; then\n"
                        "  printf '{\"jobs\":['; head -c 70000000 /dev/zero | tr '\\0' ' '; "
                        "printf '%s' '" +
                            json_tail +
                            "'\n"
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
// 64 MiB switch to the text format could never fire. Now the document is read as squeue
// prints it, whole at any size: a huge one is used, and later cycles ask for text.
TEST(SlurmClient, JsonOfAnySizeIsReadWholeAndAutoThenSwitchesToText) {
  HugeSqueue fake;
  SlurmClient automatic(fake.settings("auto"));
  auto q = automatic.queue();
  ASSERT_TRUE(q.ok()) << q.error;
  ASSERT_EQ(q.jobs.size(), 1u);
  EXPECT_EQ(q.jobs[0].job_id, 8);  // the job after 70 MB
  EXPECT_TRUE(automatic.text_mode());
  auto next = automatic.queue();
  ASSERT_EQ(next.jobs.size(), 1u);
  EXPECT_EQ(next.jobs[0].job_id, 7);

  SlurmClient json_only(fake.settings("json"));
  auto whole = json_only.queue();
  ASSERT_TRUE(whole.ok()) << whole.error;
  ASSERT_EQ(whole.jobs.size(), 1u);
  EXPECT_EQ(whole.jobs[0].job_id, 8);
  EXPECT_FALSE(json_only.text_mode());
}

// A document that stops early (squeue exited 0 all the same) is never a shorter queue.
TEST(SlurmClient, JsonCutShortIsAnErrorNotAShorterQueue) {
  HugeSqueue fake("{\"job_id\":8,\"name\":\"tr\",\"job_state\":\"RUNNING\"},{\"job_id\":9");
  SlurmClient json_only(fake.settings("json"));
  auto cut = json_only.queue();
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.error.find("cut short"), std::string::npos) << cut.error;
  EXPECT_TRUE(cut.jobs.empty());
}

}  // namespace
}  // namespace llmwatch

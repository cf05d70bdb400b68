#include "slurm/slurm_text.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "test_util.h"

namespace llmwatch {
namespace {

TEST(SqueueText, ParsesTheRealPipeCapture) {
  auto parsed =
      parse_squeue_text(testing::read_file(testing::fixture("slurm-22.05.8/squeue-pipe.txt")));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.jobs.size(), 4u);
  const auto& rest = parsed.jobs[0];
  EXPECT_EQ(rest.display_id(), "3_[2-10%1]");
  EXPECT_EQ(rest.array_max_tasks, 1);
  EXPECT_EQ(rest.reason, "JobArrayTaskLimit");
  EXPECT_TRUE(rest.pending());
  EXPECT_EQ(parsed.jobs[1].display_id(), "4");
  EXPECT_EQ(parsed.jobs[1].name, "llmwatch");
  const auto& task = parsed.jobs[2];
  EXPECT_EQ(task.display_id(), "3_1");
  EXPECT_EQ(task.job_id, 6);
  EXPECT_EQ(task.nodes, "node-[1-2]");
  EXPECT_EQ(task.node_count, 2);
  EXPECT_EQ(task.batch_host, "node-1");
  EXPECT_TRUE(task.running());
  // The defect: the text form dropped %l and %S, so a requeued task (same id, new start) was
  // the same task to llmwatch, and no time limit was known.
  EXPECT_EQ(task.start_time, slurm_timestamp("2026-11-22T01:36:25"));
  EXPECT_GT(task.start_time, 1'700'000'000);
  EXPECT_EQ(task.time_limit_minutes, 0);  // UNLIMITED
}

TEST(SqueueText, SlurmDurationsAndTimes) {
  EXPECT_EQ(slurm_minutes("30:00"), 30);
  EXPECT_EQ(slurm_minutes("1:30:00"), 90);
  EXPECT_EQ(slurm_minutes("2-00:00:00"), 2 * 1440);
  EXPECT_EQ(slurm_minutes("45"), 45);
  EXPECT_EQ(slurm_minutes("UNLIMITED"), 0);
  EXPECT_EQ(slurm_minutes("-"), 0);
  // Found by fuzz_squeue_text: days or hours that overflow the minutes are garbage.
  EXPECT_EQ(slurm_minutes("008842896303586739937-2"), 0);
  EXPECT_EQ(slurm_minutes("153722867280912931:00:00"), 0);
  EXPECT_EQ(slurm_minutes("365000-00:00:00"), 365000LL * 1440);
  EXPECT_EQ(slurm_timestamp("N/A"), 0);
  EXPECT_EQ(slurm_timestamp("Unknown"), 0);
}

TEST(SqueueText, NamesWithTheDelimiterAndGarbage) {
  auto parsed =
      parse_squeue_text("7|7|N/A|RUNNING|a|b|alice|n1|None|0:01|UNLIMITED|2026-11-22T01:36:25\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.jobs[0].name, "a|b");
  EXPECT_EQ(parsed.jobs[0].user, "alice");
  EXPECT_FALSE(parse_squeue_text("squeue: error: Invalid user\n").ok());
  EXPECT_FALSE(parse_squeue_text("x|y|N/A|RUNNING|a|alice|n1|None|0:01|UNLIMITED|N/A\n").ok());
  EXPECT_TRUE(parse_squeue_text("").ok());
}

// A cycle keeps only its watched jobs (by name or id) and its own; the rest of a big queue is
// dropped before it is parsed, but a malformed line is still an error, never skipped.
TEST(SqueueText, FilterKeepsWatchedJobsAndStillRejectsGarbage) {
  auto text = testing::read_file(testing::fixture("slurm-22.05.8/squeue-pipe.txt"));
  JobFilter by_name;
  by_name.names = {"my-training"};
  auto parsed = parse_squeue_text(text, &by_name);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.jobs.size(), 2u);  // the running task and the pending remainder
  for (const auto& j : parsed.jobs) EXPECT_EQ(j.name, "my-training");
  JobFilter by_array_id;
  by_array_id.ids = {3};
  EXPECT_EQ(parse_squeue_text(text, &by_array_id).jobs.size(), 2u);
  JobFilter none;
  EXPECT_TRUE(parse_squeue_text(text, &none).jobs.empty());
  EXPECT_FALSE(parse_squeue_text(text + "x|notanumber|N/A|RUNNING|a|b|c|d|e|f|g\n", &none).ok());
  EXPECT_FALSE(parse_squeue_text("garbage without fields\n", &none).ok());
  auto json = parse_squeue_json(testing::read_file(testing::fixture("slurm-22.05.8/squeue.json")),
                                &by_name);
  ASSERT_TRUE(json.ok());
  for (const auto& j : json.jobs) EXPECT_EQ(j.name, "my-training");
}

// The details of several new tasks in one squeue call (#25), as a real 22.05 printed them:
// paths are Slurm's patterns, a '|' in a path is no delimiter, a cut line is skipped.
TEST(JobDetails, ParsesTheRealCaptureAndSkipsACutLine) {
  auto text = testing::read_file(testing::fixture("slurm-22.05.8/squeue-job-details.txt"));
  auto details = parse_job_details(text + "9\x1f/cut");
  ASSERT_EQ(details.size(), 2u);
  EXPECT_EQ(details["3"]["StdOut"], "/tmp/a b|%j.out");
  EXPECT_EQ(details["3"]["Command"], "(null)");
  EXPECT_EQ(details["3"]["GroupName"], "llmwatch-itest");
  EXPECT_EQ(details["4_1"]["GroupName"], "root");
  // What each was allocated: the local cluster has no GPU GRES, so no gres/gpu.
  EXPECT_EQ(details["3"]["TRES"], "cpu=1,node=1,billing=1");
  EXPECT_EQ(gpus_in_tres(details["3"]["TRES"]), 0);
  EXPECT_EQ(details["4_1"]["StdErr"], "/tmp/rel-%A_%a.out");
  EXPECT_EQ(details["4_1"]["Command"], "/work/main/examples/fake-trainer.sh");
  EXPECT_EQ(details["4_1"]["WorkDir"], "/tmp");
  EXPECT_EQ(details["4_1"]["Partition"], "debug");
  EXPECT_TRUE(parse_job_details("").empty());
}

TEST(SinfoText, ParsesTheGcmProductionSample) {
  auto parsed =
      parse_sinfo_text(testing::read_file(testing::fixture("slurm-gcm/sinfo-pipe-sample.txt")));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.nodes.size(), 3u);  // node0201 appears twice (two reservations)
  EXPECT_EQ(parsed.nodes[0].name, "node0201");
  EXPECT_TRUE(parsed.nodes[0].drained());
  EXPECT_TRUE(parsed.nodes[0].down());  // '*': not responding
  EXPECT_EQ(parsed.nodes[0].reason, "replace");
  EXPECT_EQ(parsed.nodes[1].state, "allocated");
  EXPECT_FALSE(parsed.nodes[1].unusable());
  EXPECT_EQ(parsed.nodes[1].reason, "");
}

TEST(SinfoText, OwnFormatWithHostlistsAndBadHeader) {
  auto parsed = parse_sinfo_text(
      "NODELIST|STATE|REASON\nnode-[1-2]|idle|none\nnode-3|drained|Kill task failed\n");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed.nodes.size(), 3u);
  EXPECT_TRUE(parsed.nodes[2].drained());
  EXPECT_EQ(parsed.nodes[2].reason, "Kill task failed");
  EXPECT_FALSE(parse_sinfo_text("PARTITION AVAIL TIMELIMIT\n").ok());
  EXPECT_FALSE(parse_sinfo_text("NODELIST|STATE\nnode-[1-|idle\n").ok());
}

// Our own format, as sinfo 22.05 printed it on the local cluster (header NODE_ADDR for %o):
// each node's NodeAddr, by which an NCCL error names it as a peer.
TEST(SinfoText, EachNodesAddressIsRead) {
  auto parsed = parse_sinfo_text(
      "NODELIST|STATE|NODE_ADDR|REASON|PARTITION\nnode-1|idle|10.11.0.1|none|debug\n"
      "node-2|idle|10.11.0.2|none|debug\nnode-3|idle|node-3|none|debug\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.nodes.size(), 3u);
  EXPECT_EQ(parsed.nodes[1].address, "10.11.0.2");
  EXPECT_EQ(parsed.nodes[1].partitions, std::vector<std::string>{"debug"});
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& n : parsed.nodes) pairs.emplace_back(n.name, n.address);
  // node-3 has no NodeAddr of its own (sinfo prints its name): it names no address.
  EXPECT_EQ(nodes_by_address(pairs),
            (std::map<std::string, std::string>{{"10.11.0.1", "node-1"}, {"10.11.0.2", "node-2"}}));
  // One host running several slurmds: an address they share names none of them.
  pairs.emplace_back("node-4", "10.11.0.2");
  EXPECT_EQ(nodes_by_address(pairs).count("10.11.0.2"), 0u);
}

TEST(SinfoText, PartitionsOfANodeListedOncePerPartition) {
  auto parsed = parse_sinfo_text(
      "NODELIST|STATE|REASON|PARTITION\nnode-[1-2]|idle|none|gpu*\nnode-2|idle|none|debug\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.nodes.size(), 2u);
  EXPECT_EQ(parsed.nodes[0].partitions, (std::vector<std::string>{"gpu"}));
  EXPECT_EQ(parsed.nodes[1].partitions, (std::vector<std::string>{"gpu", "debug"}));
}

TEST(ScontrolShow, JobAndNodeRecords) {
  auto jobs = parse_scontrol_show(
      testing::read_file(testing::fixture("slurm-22.05.8/scontrol-show-job.txt")));
  ASSERT_GE(jobs.size(), 3u);
  EXPECT_EQ(jobs[0]["JobId"], "3");
  EXPECT_EQ(jobs[0]["ArrayTaskId"], "2-10%1");
  EXPECT_EQ(jobs[1]["StdOut"], "/shared/project/my-training-3_1.out");
  EXPECT_EQ(jobs[1]["Command"], "/shared/project/train.slurm");
  EXPECT_EQ(jobs[1]["NodeList"], "node-[1-2]");
  auto nodes = parse_scontrol_show(
      testing::read_file(testing::fixture("slurm-22.05.8/scontrol-show-node.txt")));
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0]["NodeName"], "node-1");
  EXPECT_EQ(nodes[0]["State"], "ALLOCATED");
  bool kill_task_failed = false;
  for (auto& n : nodes) kill_task_failed |= n["Reason"].rfind("Kill task failed", 0) == 0;
  EXPECT_TRUE(kill_task_failed);  // a value with spaces
}

// A field set to nothing ("(null)") is known and empty; one the record lacks is not known.
TEST(ScontrolShow, AFieldSetToNothingIsEmptyAndAMissingOneUnknown) {
  auto job = parse_scontrol_show("JobId=7 ExcNodeList=(null) NodeList=node-[1-2]\n").at(0);
  EXPECT_EQ(scontrol_field(job, "ExcNodeList"), std::optional<std::string>(""));
  EXPECT_EQ(scontrol_field(job, "NodeList"), std::optional<std::string>("node-[1-2]"));
  EXPECT_EQ(scontrol_field(job, "ArrayTaskId"), std::nullopt);
}

// slurm_timestamp converts each hour of local time once: it must still agree with mktime
// minute by minute, across a DST change both ways (Berlin: 2026-03-29 and 2026-10-25). (Days
// no other test converts: an hour converted under another zone is kept for a minute.)
TEST(SlurmTimestamp, AgreesWithMktimeAcrossDaylightSavingChanges) {
  if (access("/usr/share/zoneinfo/Europe/Berlin", R_OK) != 0) GTEST_SKIP() << "no tzdata";
  const char* before = std::getenv("TZ");
  std::string saved = before ? before : "";
  setenv("TZ", "Europe/Berlin", 1);
  tzset();
  for (const char* day : {"2026-03-28", "2026-03-29", "2026-10-25", "2026-10-26"})
    for (int h = 0; h < 24; ++h)
      for (int m = 0; m < 60; m += 7) {
        char text[32];
        std::snprintf(text, sizeof text, "%sT%02d:%02d:%02d", day, h, m, (h * 7 + m) % 60);
        std::tm tm{};
        ASSERT_TRUE(strptime(text, "%Y-%m-%dT%H:%M:%S", &tm));
        tm.tm_isdst = -1;
        std::time_t expected = std::mktime(&tm);
        if (h == 2 && std::string(day) == "2026-03-29") continue;  // no such local time
        if (h == 2 && std::string(day) == "2026-10-25") continue;  // twice: either is right
        EXPECT_EQ(slurm_timestamp(text), expected) << text;
      }
  if (before)
    setenv("TZ", saved.c_str(), 1);
  else
    unsetenv("TZ");
  tzset();
}

// sacct from a real slurmdbd: a failed job, a requeued id with a record per start (the second
// never started), array tasks cancelled by root.
TEST(Sacct, ParsesTheRealCaptureAndPicksTheTaskOfItsStart) {
  auto records =
      parse_sacct(testing::read_file(testing::fixture("slurm-22.05.8/sacct-parsable.txt")));
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].at("State"), "FAILED");
  EXPECT_EQ(records[0].at("ExitCode"), "3:0");
  EXPECT_EQ(records[2].at("JobID"), "3_1");
  EXPECT_EQ(records[2].at("State"), "CANCELLED by 0");
  EXPECT_EQ(records[4].at("NodeList"), "None assigned");
  // Id 2 ran from 1795411562 and was requeued; its later record never started.
  EXPECT_EQ(sacct_record_of(records, "2", 1795411562).at("State"), "REQUEUED");
  EXPECT_TRUE(sacct_record_of(records, "2", 1795411999).empty());  // another start: not this
  EXPECT_EQ(sacct_record_of(records, "2", 0).at("State"), "CANCELLED by 0");  // the latest
  EXPECT_EQ(sacct_record_of(records, "3_2", 1795411565).at("NodeList"), "node-2");
  EXPECT_TRUE(sacct_record_of(records, "3", 1795411564).empty());
  // A cut line is skipped, never half-read; a '|' in the last field stays in it.
  auto cut = parse_sacct("7|1795411562|1795411563|FAI\n8|1|2|FAILED|1:0|n1|1|a|b\n");
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].at("Reason"), "a|b");
}

}  // namespace
}  // namespace llmwatch

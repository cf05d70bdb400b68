#include "slurm/json_list_splitter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"
#include "test_util.h"

namespace llmwatch {
namespace {

struct Split {
  std::vector<std::string> elements;
  std::string rest, error;
};

Split split(const std::string& doc, size_t piece, const std::string& list = "jobs") {
  Split out;
  JsonListSplitter s(list, 64, [&](std::string_view t) {
    out.elements.emplace_back(t);
    return true;
  });
  for (size_t i = 0; i < doc.size(); i += piece) s.feed(std::string_view(doc).substr(i, piece));
  out.error = s.finish().error();
  out.rest = s.rest();
  return out;
}

// Squeue prints in pipe-sized pieces that cut anywhere: inside a string, an escape, a key.
// Every cut must give the same elements and rest as the document read whole.
TEST(JsonListSplitter, EveryCutGivesTheSameElements) {
  std::string doc = R"({"meta": {"jobs": [1]}, "errors": [],
    "jobs": [{"name": "a \"}]\\", "x": {"jobs": [{}]}}, 3, {"name": "caf\u00e9 [{"},
             {"id": 2, "list": [[], {}]}],
    "tail": "jobs"})";
  Split whole = split(doc, doc.size());
  ASSERT_EQ(whole.error, "");
  ASSERT_EQ(whole.elements.size(), 3u);  // the number between is not an object: skipped
  EXPECT_EQ(nlohmann::json::parse(whole.elements[0])["name"], "a \"}]\\");
  EXPECT_EQ(nlohmann::json::parse(whole.elements[2])["id"], 2);
  auto rest = nlohmann::json::parse(whole.rest);  // a valid document, its list emptied
  EXPECT_TRUE(rest["jobs"].empty());
  EXPECT_EQ(rest["meta"]["jobs"][0], 1);
  EXPECT_EQ(rest["tail"], "jobs");
  for (size_t piece = 1; piece < 40; ++piece) {
    Split cut = split(doc, piece);
    EXPECT_EQ(cut.error, "") << piece;
    EXPECT_EQ(cut.elements, whole.elements) << piece;
    EXPECT_EQ(cut.rest, whole.rest) << piece;
  }
}

TEST(JsonListSplitter, ADocumentCutShortIsNeverComplete) {
  std::string doc = R"({"jobs": [{"id": 1}, {"id": 2}]})";
  for (size_t end = 0; end < doc.size(); ++end)
    EXPECT_NE(split(doc.substr(0, end), 3).error, "") << doc.substr(0, end);
  EXPECT_EQ(split(doc, 3).error, "");
}

// The real 22.05 captures, fed in small pieces, parse as they do whole.
TEST(JsonListSplitter, RealCapturesParseTheSameInPieces) {
  std::string text = testing::read_file(testing::fixture("slurm-22.05.8/squeue.json"));
  SqueueParse whole = parse_squeue_json(text);
  ASSERT_TRUE(whole.ok()) << whole.error;
  ASSERT_FALSE(whole.jobs.empty());
  for (size_t piece : {1, 13, 4096}) {
    SqueueJsonReader reader;
    for (size_t i = 0; i < text.size(); i += piece)
      reader.feed(std::string_view(text).substr(i, piece));
    SqueueParse pieces = reader.finish();
    ASSERT_TRUE(pieces.ok()) << pieces.error;
    ASSERT_EQ(pieces.jobs.size(), whole.jobs.size());
    for (size_t j = 0; j < whole.jobs.size(); ++j)
      EXPECT_EQ(slurm_job_to_json(pieces.jobs[j]), slurm_job_to_json(whole.jobs[j]));
  }
  // slurmctld down: 22.05 exits 0 with an error entry; still "cannot tell".
  auto down = parse_squeue_json(
      testing::read_file(testing::fixture("slurm-22.05.8/squeue-ctld-down.json")));
  EXPECT_FALSE(down.ok());
  auto nodes = parse_sinfo_json(testing::read_file(testing::fixture("slurm-22.05.8/sinfo.json")));
  ASSERT_TRUE(nodes.ok()) << nodes.error;
  EXPECT_FALSE(nodes.nodes.empty());
}

}  // namespace
}  // namespace llmwatch

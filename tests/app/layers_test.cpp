// The data flows one way, and so do the includes: a file may include its own layer and the
// layers below it, never one above. util < config < slurm < probes < rules < policy < store <
// plugins < views < cycle < app. (The issue found four upward includes; this keeps them out.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace llmwatch {
namespace {

const std::vector<std::string> kLayers = {"util",  "config",  "slurm", "probes", "rules", "policy",
                                          "store", "plugins", "views", "cycle",  "app"};

// `root`'s plugins/ holds a directory per kind of plugin, included as "alert/...", "self/...":
// those are the plugins layer too, whatever their names.
int layer_of(const std::string& path, const std::filesystem::path& root) {
  std::string p = path.rfind("src/", 0) == 0 ? path.substr(4) : path;
  std::string top = p.substr(0, p.find('/'));
  bool plugin = p.rfind("plugins/", 0) == 0 || p == "action.h" || p == "registry.h" ||
                (top != p && std::filesystem::is_directory(root / "plugins" / top));
  auto it = std::find(kLayers.begin(), kLayers.end(), plugin ? "plugins" : top);
  return it == kLayers.end() ? -1 : static_cast<int>(it - kLayers.begin());
}

TEST(Layers, NoIncludePointsUpward) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(testing::fixture("")).parent_path().parent_path().parent_path();
  std::regex include(R"re(#include "([^"]+)")re");
  std::vector<std::string> problems;
  int files = 0;
  for (const char* top : {"src", "plugins"})
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      std::string rel = fs::relative(e.path(), root).string();
      int from = layer_of(rel, root);
      // A new directory must be given its place among the layers, or nothing it includes, and
      // nothing that includes it, would be checked.
      if (from < 0) {
        problems.push_back(rel + ": its layer is not in the list");
        continue;
      }
      ++files;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      std::string s = text.str();
      for (std::sregex_iterator m(s.begin(), s.end(), include), end; m != end; ++m) {
        int to = layer_of((*m)[1], root);
        if (to > from) problems.push_back(rel + " includes " + (*m)[1].str());
      }
    }
  EXPECT_GT(files, 100);
  // A plugin's own directory counts as the plugins layer: a rule including one points upward.
  EXPECT_EQ(layer_of("node/node_check.h", root), layer_of("plugins/registry.h", root));
  EXPECT_LT(layer_of("rules/goodput.h", root), layer_of("self/x.h", root));
  std::string all;
  for (const auto& u : problems) all += u + "\n";
  EXPECT_TRUE(problems.empty()) << all;
}

}  // namespace
}  // namespace llmwatch

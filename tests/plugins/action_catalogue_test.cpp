// One catalogue of actions, filled by each plugin's own file: config validation and the CLI's
// verbs read it, so no list of action names is kept by hand.
#include "config/action_catalogue.h"

#include <gtest/gtest.h>

#include "config/config.h"
#include "registry.h"

namespace llmwatch {
namespace {

TEST(ActionCatalogue, EveryPluginDescribesItselfOnce) {
  auto catalogue = action_catalogue();
  std::vector<std::string> described;
  for (const auto& a : catalogue) {
    described.push_back(a.name);
    EXPECT_FALSE(a.help.empty()) << a.name;
    EXPECT_TRUE(find_action(a.name)) << a.name;
  }
  EXPECT_EQ(described, action_names());
  std::vector<std::string> verbs;
  for (const auto& a : catalogue)
    if (a.manual) verbs.push_back(a.name);
  EXPECT_EQ(verbs, (std::vector<std::string>{"cancel", "dump", "hold", "kill", "release", "restart",
                                             "save"}));
  EXPECT_EQ(action_names_for(ActionTarget::Node),
            (std::vector<std::string>{"drain", "reboot", "undrain"}));
}

// Config validation follows the catalogue: every job action is accepted in an on_* list, a
// node action is not, and a misspelling names the key and line.
TEST(ActionCatalogue, ConfigAcceptsExactlyTheJobActions) {
  for (const auto& name : action_names_for(ActionTarget::Job)) {
    auto r = load_config_string("[[job]]\nname = \"a\"\non_hang = [\"" + name + "\"]\n", "t.toml");
    EXPECT_TRUE(r.config) << name;
  }
  auto r = load_config_string("[[job]]\nname = \"a\"\non_hang = [\"drain\"]\n", "t.toml");
  ASSERT_FALSE(r.config);
  EXPECT_NE(r.errors.front().str().find("t.toml:3:"), std::string::npos) << r.errors.front().str();
}

}  // namespace
}  // namespace llmwatch

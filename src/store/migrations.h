#pragma once
// The state store's schema, as an ordered list of migrations. PRAGMA user_version holds the
// number applied; a store written by a newer llmwatch is refused rather than corrupted.
#include <string>
#include <vector>

#include "store/sqlite_db.h"

namespace llmwatch {

const std::vector<std::string>& schema_migrations();
// Applies what is missing, each in its own transaction; returns the resulting version.
int migrate(Db& db);
int schema_version(Db& db);

}  // namespace llmwatch

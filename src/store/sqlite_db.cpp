#include "store/sqlite_db.h"

namespace llmwatch {

Statement::Statement(sqlite3* db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
    throw DbError(std::string("sqlite prepare: ") + sqlite3_errmsg(db) + " in: " + sql);
}

Statement::Statement(sqlite3* db, sqlite3_stmt* cached, bool* in_use)
    : db_(db), stmt_(cached), in_use_(in_use) {
  *in_use_ = true;
}

Statement::~Statement() {
  if (in_use_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *in_use_ = false;
  } else {
    sqlite3_finalize(stmt_);
  }
}

Statement Db::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      throw DbError(std::string("sqlite prepare: ") + sqlite3_errmsg(db_) + " in: " + sql);
    it = cache_.emplace(sql, Cached{stmt, false}).first;
  }
  if (it->second.in_use) return Statement(db_, sql);
  return Statement(db_, it->second.stmt, &it->second.in_use);
}

Statement& Statement::bind(int index, const std::string& value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw DbError(std::string("sqlite: ") + sqlite3_errmsg(db_));
}

std::string Statement::text(int col) const {
  auto p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col))
           : std::string();
}
std::int64_t Statement::integer(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
double Statement::real(int col) const {
  return sqlite3_column_double(stmt_, col);
}
bool Statement::is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

Db::Db(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw DbError(path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  // Rollback journal, not WAL: WAL needs shared memory, which network filesystems lack,
  // and state_dir typically sits on one.
  exec("PRAGMA journal_mode=DELETE");
  exec("PRAGMA synchronous=FULL");
  exec("PRAGMA foreign_keys=ON");
}

Db::~Db() {
  for (auto& [_, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close(db_);
}

void Db::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw DbError("sqlite: " + msg);
  }
}

}  // namespace llmwatch

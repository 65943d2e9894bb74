#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "storage/schema.h"
#include "storage/store.h"
#include "storage/test_support.h"

namespace brake::storage {
namespace {

TEST_CASE("A new database is migrated to the newest schema", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  REQUIRE(Store::SchemaVersion() >= 1);
  for (int open = 0; open < 2; ++open) {  // reopening migrates nothing
    REQUIRE(Store::Open(path).ok());
    CHECK(*QueryRawInt(path, "PRAGMA user_version") == Store::SchemaVersion());
  }
  CHECK(*QueryRawInt(path,
                     "SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
                     "AND name IN ('policies', 'tasks', 'limiters', 'spend', "
                     "'lease_chunks', 'lease_settled', 'breakers', "
                     "'prices', 'ledger', 'ledger_schema4')") == 10);
  // The ledger is one B-tree keyed by user, time and lease (schema 5): no
  // index of its own besides the key; the one before it stays beside it.
  CHECK(*QueryRawInt(path,
                     "SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
                     "AND tbl_name = 'ledger' AND sql IS NOT NULL") == 0);
  CHECK(*QueryRawText(path,
                      "SELECT group_concat(name, ',') FROM (SELECT name FROM "
                      "pragma_index_info('sqlite_autoindex_ledger_1') ORDER "
                      "BY seqno)") == "user,time_ms,lease");
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM pragma_table_list "
                           "WHERE name = 'ledger' AND wr = 1") == 1);
}

TEST_CASE("Lease rows of schema 2 become one chunk and load unchanged",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("v2.db");
  auto all = Migrations();
  REQUIRE(all.size() >= 3);
  REQUIRE(MigrateRawForTest(path, {all[0], all[1]}).ok());
  REQUIRE(ExecRawSql(path,
                     "INSERT INTO leases(id, json) VALUES "
                     "('a-1', '{\"id\":\"a-1\"}'), ('a-2', '{\"n\":2}'), "
                     "('b-7', '{}')")
              .ok());
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK(*QueryRawInt(path, "PRAGMA user_version") == Store::SchemaVersion());
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM lease_chunks") == 1);
  auto snapshot = (*store)->Load();
  REQUIRE(snapshot.ok());
  std::vector<std::string> rows;
  for (const LeaseRow& r : snapshot->leases) rows.push_back(r.id + "=" + r.json);
  CHECK(rows == std::vector<std::string>{"a-1={\"id\":\"a-1\"}",
                                         "a-2={\"n\":2}", "b-7={}"});
  // Settling one of them is a bit in that chunk; the last one deletes it.
  Batch b;
  b.leases_deleted = {"a-2"};
  REQUIRE((*store)->Apply(b).ok());
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM lease_chunks") == 1);
  b.leases_deleted = {"a-1", "b-7"};
  REQUIRE((*store)->Apply(b).ok());
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM lease_chunks") == 0);
}

TEST_CASE("Settled bitmaps of schema 5 move to lease_settled", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("v5.db");
  auto all = Migrations();
  REQUIRE(all.size() >= 6);
  REQUIRE(MigrateRawForTest(path, {all.begin(), all.begin() + 5}).ok());
  // Chunk 3: lines 0 and 2 settled (hex digit 5); chunk 4: none.
  REQUIRE(ExecRawSql(path,
                     "INSERT INTO lease_chunks(id, leases, settled) VALUES "
                     "(3, 'a\t{}\nb\t{}\nc\t{}', '5'), (4, 'd\t{}', '')")
              .ok());
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK(*QueryRawInt(path, "PRAGMA user_version") == Store::SchemaVersion());
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM pragma_table_info("
                           "'lease_chunks') WHERE name = 'settled'") == 0);
  CHECK(*QueryRawText(path, "SELECT group_concat(chunk || '=' || settled) "
                            "FROM lease_settled") == "3=5");
  auto snapshot = (*store)->Load();
  REQUIRE(snapshot.ok());
  std::vector<std::string> ids;
  for (const LeaseRow& r : snapshot->leases) ids.push_back(r.id);
  CHECK(ids == std::vector<std::string>{"b", "d"});
  Batch b;
  b.leases_deleted = {"b"};
  REQUIRE((*store)->Apply(b).ok());
  CHECK(*QueryRawInt(path, "SELECT group_concat(id) FROM lease_chunks") == 4);
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM lease_settled") == 0);
}

TEST_CASE("A database of schema 2 without leases gets no chunk",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("v2e.db");
  auto all = Migrations();
  REQUIRE(MigrateRawForTest(path, {all[0], all[1]}).ok());
  REQUIRE(Store::Open(path).ok());
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM lease_chunks") == 0);
}

TEST_CASE("Migrations run in order, one transaction each", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("m.db");
  const char* const v1 = "CREATE TABLE a(x);";
  const char* const v2 = "CREATE TABLE b(y); INSERT INTO b VALUES(1);";
  const char* const v3_bad = "CREATE TABLE c(z); INSERT INTO nosuch VALUES(1);";
  const char* const v3 = "CREATE TABLE c(z);";

  REQUIRE(MigrateRawForTest(path, {v1}).ok());
  CHECK(*QueryRawInt(path, "PRAGMA user_version") == 1);

  const Status failed = MigrateRawForTest(path, {v1, v2, v3_bad});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.code() == ErrorCode::kUnavailable);
  CHECK_THAT(failed.message(), Catch::Contains("migration 2 -> 3") &&
                                   Catch::Contains("no such table: nosuch"));
  // Migration 2 committed; the failed one left nothing behind.
  CHECK(*QueryRawInt(path, "PRAGMA user_version") == 2);
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM b") == 1);
  CHECK(*QueryRawInt(path,
                     "SELECT count(*) FROM sqlite_schema "
                     "WHERE name = 'c'") == 0);

  REQUIRE(MigrateRawForTest(path, {v1, v2, v3}).ok());
  CHECK(*QueryRawInt(path, "PRAGMA user_version") == 3);
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM b") == 1);  // v2 ran once

  const Status newer = MigrateRawForTest(path, {v1});
  CHECK_THAT(newer.message(),
             Catch::Contains("database schema version 3 is newer than this "
                             "braked supports (1); refusing to start"));
  CHECK(*QueryRawInt(path, "PRAGMA user_version") == 3);
}

}  // namespace
}  // namespace brake::storage

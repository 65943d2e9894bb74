// Loading subjects on demand: the rows of a few scopes and their task
// ancestors, the scan of stored scopes, deletes of a whole kind.
#include <catch2/catch.hpp>
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "storage/store.h"
#include "storage/test_support.h"

namespace brake {
namespace {

using storage::TempDir;

std::unique_ptr<Store> OpenIn(const TempDir& dir) {
  auto store = Store::Open(dir.File("brake.db"));
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return std::move(*store);
}

// alice owns root <- mid <- leaf; bob owns solo. Every user and task has a
// limiter row and spend.
Batch Populated() {
  Batch b;
  b.tasks_put = {{"root", "alice", "", 1},
                 {"mid", "alice", "root", 2},
                 {"leaf", "alice", "mid", 3},
                 {"solo", "bob", "", 4}};
  for (const char* scope : {"user:alice", "user:bob", "task:root", "task:mid",
                            "task:leaf", "task:solo", "global"}) {
    b.limiters_put.push_back({scope, "q", "quota", {1, 2, 3}});
    b.spend_put.push_back({scope, 1, 10, 100});
  }
  return b;
}

std::set<std::string> Scopes(const SubjectRows& rows) {
  return {rows.scopes.begin(), rows.scopes.end()};
}

TEST_CASE("store: LoadSubjects brings a task's ancestors along",
          "[storage][subjects]") {
  TempDir dir;
  auto store = OpenIn(dir);
  REQUIRE(store->Apply(Populated()).ok());

  auto rows = store->LoadSubjects({"user:alice", "task:leaf", "task:new"});
  REQUIRE(rows.ok());
  CHECK(Scopes(*rows) == std::set<std::string>{"user:alice", "task:leaf",
                                               "task:mid", "task:root",
                                               "task:new"});
  CHECK(rows->tasks.size() == 3);  // leaf, mid, root; "new" is not stored
  CHECK(rows->limiters.size() == 4);
  CHECK(rows->spend.size() == 4);
  for (const LimiterRow& row : rows->limiters) {
    CHECK(row.state == std::vector<int64_t>{1, 2, 3});
  }
  auto none = store->LoadSubjects({"user:nobody"});
  REQUIRE(none.ok());
  CHECK(none->scopes == std::vector<std::string>{"user:nobody"});
  CHECK(none->limiters.empty());
}

TEST_CASE("store: Load can leave the subjects on disk", "[storage][subjects]") {
  TempDir dir;
  auto store = OpenIn(dir);
  REQUIRE(store->Apply(Populated()).ok());
  auto lean = store->Load(Store::LoadWhat::kWithoutSubjects);
  REQUIRE(lean.ok());
  CHECK(lean->tasks.empty());
  CHECK(lean->limiters.empty());
  CHECK(lean->spend.empty());
  auto full = store->Load();
  REQUIRE(full.ok());
  CHECK(full->tasks.size() == 4);

  auto count = store->CountStoredScopes();
  REQUIRE(count.ok());
  CHECK(*count == 4 + 7 + 7);
  std::set<std::string> seen;
  REQUIRE(store->ForEachStoredScope([&](std::string_view s) {
    seen.emplace(s);
  }).ok());
  CHECK(seen.size() == 7);
  CHECK(seen.count("task:solo") == 1);
}

TEST_CASE("store: a KIND:* delete removes that kind's rows only",
          "[storage][subjects]") {
  TempDir dir;
  auto store = OpenIn(dir);
  REQUIRE(store->Apply(Populated()).ok());
  Batch reset;
  reset.limiter_scopes_deleted = {"user:*"};
  reset.spend_deleted = {"user:*"};
  reset.spend_put = {{"user:alice", 0, 0, 7}};  // puts run after deletes
  REQUIRE(store->Apply(reset).ok());
  auto rows = store->LoadSubjects({"user:alice", "user:bob", "task:solo"});
  REQUIRE(rows.ok());
  CHECK(rows->limiters.size() == 1);  // task:solo's
  CHECK(rows->limiters.front().scope == "task:solo");
  REQUIRE(rows->spend.size() == 2);
  std::sort(rows->spend.begin(), rows->spend.end(),
            [](const SpendRow& a, const SpendRow& b) { return a.scope < b.scope; });
  CHECK(rows->spend[0].scope == "task:solo");
  CHECK(rows->spend[1].scope == "user:alice");
  CHECK(rows->spend[1].usd_nano == 7);
}

TEST_CASE("batch: a KIND:* delete drops earlier puts of that kind when merged",
          "[storage][subjects]") {
  Batch a;
  a.spend_put = {{"user:alice", 1, 1, 1}, {"task:t", 1, 1, 1}};
  Batch b;
  b.spend_deleted = {"user:*"};
  a.Append(std::move(b));
  REQUIRE(a.spend_put.size() == 1);
  CHECK(a.spend_put.front().scope == "task:t");
}

}  // namespace
}  // namespace brake

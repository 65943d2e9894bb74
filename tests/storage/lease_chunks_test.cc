// Open leases stored many to a row (storage/lease_chunks.h), through Store.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "storage/lease_chunks.h"
#include "storage/store.h"
#include "storage/test_support.h"

namespace brake {
namespace {

using storage::ExecRawSql;
using storage::QueryRawInt;
using storage::QueryRawText;
using storage::TempDir;
using Rows = std::vector<std::string>;

std::unique_ptr<Store> Open(const std::string& path) {
  auto store = Store::Open(path);
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return std::move(*store);
}

Rows Leases(Store& store) {
  auto snapshot = store.Load();
  INFO(snapshot.status().ToString());
  REQUIRE(snapshot.ok());
  Rows out;
  for (const LeaseRow& r : snapshot->leases) out.push_back(r.id + "=" + r.json);
  return out;
}

Status Put(Store& store, const std::vector<LeaseRow>& put,
           const std::vector<std::string>& deleted = {}) {
  Batch b;
  for (const LeaseRow& row : put) b.leases_put.Add(row.id, row.json);
  for (const std::string& id : deleted) b.leases_deleted.push_back(id);
  return store.Apply(b);
}

int64_t Chunks(const std::string& path) {
  return *QueryRawInt(path, "SELECT count(*) FROM lease_chunks");
}

// Chunk 1's bitmap of settled lines.
std::string SettledOfChunk1(const std::string& path) {
  return *QueryRawText(path,
                       "SELECT settled FROM lease_settled WHERE chunk = 1");
}

// From now on a batch with a ledger row of user "boom" rolls back.
void FailLedgerRowsOfBoom(const std::string& path) {
  REQUIRE(ExecRawSql(path,
                     "CREATE TRIGGER fail_boom BEFORE INSERT ON ledger "
                     "WHEN NEW.user = 'boom' "
                     "BEGIN SELECT RAISE(ABORT, 'injected failure'); END;")
              .ok());
}

LedgerRow Boom() {
  LedgerRow row;
  row.user = "boom";
  return row;
}

TEST_CASE("lease chunks: one row per batch, deleted when all settle",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = Open(path);
  REQUIRE(Put(*store, {{"L1", "{1}"}, {"L2", "{2}"}, {"L3", "{3}"}}).ok());
  CHECK(Chunks(path) == 1);
  REQUIRE(Put(*store, {{"L4", "{4}"}}).ok());
  CHECK(Chunks(path) == 2);
  REQUIRE(Put(*store, {}, {"L2", "nope"}).ok());
  CHECK(Chunks(path) == 2);
  CHECK(Leases(*store) == Rows{"L1={1}", "L3={3}", "L4={4}"});
  REQUIRE(Put(*store, {}, {"L1", "L3"}).ok());
  CHECK(Chunks(path) == 1);
  store.reset();

  SECTION("a new Store finds them without a Load first") {
    auto again = Open(path);
    REQUIRE(Put(*again, {}, {"L4"}).ok());
    CHECK(Chunks(path) == 0);
    CHECK(Leases(*again).empty());
  }
  SECTION("and after one") {
    auto again = Open(path);
    CHECK(Leases(*again) == Rows{"L4={4}"});
    REQUIRE(Put(*again, {{"L5", "{5}"}}, {"L4"}).ok());
    CHECK(Chunks(path) == 1);
    CHECK(Leases(*again) == Rows{"L5={5}"});
  }
}

TEST_CASE("lease chunks: a lease put again takes a new line", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = Open(path);
  REQUIRE(Put(*store, {{"L1", "{old}"}}).ok());
  REQUIRE(Put(*store, {{"L1", "{new}"}}).ok());
  CHECK(Leases(*store) == Rows{"L1={new}"});
  CHECK(Chunks(path) == 1);  // the first chunk's only line moved
  // Twice in one batch (merged batches): the last one counts.
  REQUIRE(Put(*store, {{"L2", "{a}"}, {"L2", "{b}"}}).ok());
  CHECK(Leases(*store) == Rows{"L1={new}", "L2={b}"});
  REQUIRE(Put(*store, {}, {"L2"}).ok());
  CHECK(Leases(*store) == Rows{"L1={new}"});
  CHECK(Chunks(path) == 1);
}

TEST_CASE("lease chunks: a batch that rolls back leaves the index as it was",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  REQUIRE(Put(*Open(path), {{"L1", "{1}"}, {"L2", "{2}"}}).ok());
  FailLedgerRowsOfBoom(path);
  auto store = Open(path);
  Batch failing;
  failing.leases_deleted = {"L1"};
  failing.leases_put.Add("L3", "{3}");
  failing.ledger_append = {Boom()};
  REQUIRE_FALSE(store->Apply(failing).ok());
  // L1 is still open to the index: settling it later deletes its line, and
  // L3 never existed.
  REQUIRE(Put(*store, {}, {"L3"}).ok());
  REQUIRE(Put(*store, {}, {"L1"}).ok());
  CHECK(Chunks(path) == 1);
  CHECK(Leases(*store) == Rows{"L2={2}"});
  REQUIRE(Put(*store, {}, {"L2"}).ok());
  CHECK(Chunks(path) == 0);
}

TEST_CASE("lease chunks: a fresh line rolled back is forgotten",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  REQUIRE(Put(*Open(path), {{"L1", "{1}"}}).ok());
  FailLedgerRowsOfBoom(path);
  auto store = Open(path);
  Batch failing;
  failing.leases_put.Add("L3", "{3}", /*fresh=*/true);
  failing.ledger_append = {Boom()};
  REQUIRE_FALSE(store->Apply(failing).ok());
  // The next chunk takes the failed one's id and L4 its line: settling L3
  // must not settle L4.
  Batch next;
  next.leases_put.Add("L4", "{4}", /*fresh=*/true);
  REQUIRE(store->Apply(next).ok());
  REQUIRE(Put(*store, {}, {"L3"}).ok());
  CHECK(Leases(*store) == Rows{"L1={1}", "L4={4}"});
  CHECK(Leases(*Open(path)) == Rows{"L1={1}", "L4={4}"});
}

TEST_CASE("lease chunks: a retried batch that was stored after all keeps one "
          "line per lease when it forgets it is fresh",
          "[storage]") {
  // The storage worker's retry of a commit that reported failure but whose
  // frames reached the WAL (a failed fsync): the reopened store has the
  // leases already.
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto make = [] {
    Batch b;
    b.leases_put.Add("L1", "{1}", /*fresh=*/true);
    b.leases_put.Add("L2", "{2}", /*fresh=*/true);
    return b;
  };
  REQUIRE(Open(path)->Apply(make()).ok());
  Batch retry = make();
  SECTION("taken as fresh, each lease gets a second line") {
    auto store = Open(path);
    REQUIRE(store->Apply(retry).ok());
    CHECK(Leases(*Open(path)).size() == 4);
  }
  SECTION("not fresh, each keeps one line, and settling it settles it") {
    retry.leases_put.ForgetFresh();
    auto store = Open(path);
    REQUIRE(store->Apply(retry).ok());
    CHECK(Leases(*Open(path)) == Rows{"L1={1}", "L2={2}"});
    REQUIRE(Put(*store, {}, {"L1", "L2"}).ok());
    CHECK(Leases(*Open(path)).empty());
    CHECK(Chunks(path) == 0);
  }
}

TEST_CASE("lease chunks: a batch past kChunkBytes takes several rows",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = Open(path);
  // Lines of ~1 KiB: a chunk closes after the line that takes it to
  // kChunkBytes, so 2.5 chunks' worth fill three rows.
  const std::string json = "{" + std::string(1000, 'x') + "}";
  const size_t per_chunk = storage::LeaseChunks::kChunkBytes / 1000 + 1;
  std::vector<LeaseRow> put;
  Rows expected;
  for (size_t i = 0; i < per_chunk * 5 / 2; ++i) {
    put.push_back({"L" + std::to_string(100000 + i), json});
    expected.push_back(put.back().id + "=" + json);
  }
  REQUIRE(Put(*store, put).ok());
  CHECK(Chunks(path) == 3);
  CHECK(Leases(*store) == expected);
  CHECK(Leases(*Open(path)) == expected);

  SECTION("settling every line of the first row deletes it alone") {
    std::vector<std::string> first;
    for (size_t i = 0; i < per_chunk; ++i) first.push_back(put[i].id);
    REQUIRE(Put(*store, {}, first).ok());
    CHECK(Chunks(path) == 2);
    CHECK(Leases(*store) == Rows(expected.begin() + per_chunk, expected.end()));
  }
  SECTION("a rolled-back batch of several rows leaves none") {
    FailLedgerRowsOfBoom(path);
    Batch failing;
    for (size_t i = 0; i < per_chunk * 2; ++i) {
      failing.leases_put.Add("F" + std::to_string(i), json, /*fresh=*/true);
    }
    failing.ledger_append = {Boom()};
    REQUIRE_FALSE(store->Apply(failing).ok());
    CHECK(Chunks(path) == 3);
    // The next rows take the failed ones' ids: F lines settle nothing.
    REQUIRE(Put(*store, {{"L9", "{9}"}},
                {"F0", "F" + std::to_string(per_chunk + 1)})
                .ok());
    CHECK(Chunks(path) == 4);
    expected.push_back("L9={9}");
    CHECK(Leases(*Open(path)) == expected);
  }
}

TEST_CASE("lease chunks: bad rows and ids are refused", "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = Open(path);
  Status tab = Put(*store, {{"L\t1", "{}"}});
  CHECK(tab.code() == ErrorCode::kUnavailable);
  CHECK_THAT(tab.message(), Catch::Contains("tab or newline"));
  CHECK_FALSE(Put(*store, {{"L1", "{\n}"}}).ok());
  CHECK(Chunks(path) == 0);

  REQUIRE(ExecRawSql(path,
                     "INSERT INTO lease_chunks VALUES(9, 'no tab here')")
              .ok());
  auto fresh = Open(path);
  auto snapshot = fresh->Load();
  REQUIRE_FALSE(snapshot.ok());
  CHECK_THAT(snapshot.status().message(),
             Catch::Contains("malformed lease_chunks row 9"));
  REQUIRE(ExecRawSql(path,
                     "UPDATE lease_chunks SET leases = 'a\t{}' WHERE id = 9; "
                     "INSERT INTO lease_settled VALUES(9, 'xyz')")
              .ok());
  CHECK_FALSE(Open(path)->Load().ok());
  // A settled bit hides its line; new chunks get ids past the stored ones.
  REQUIRE(ExecRawSql(path,
                     "UPDATE lease_chunks SET leases = 'a\t{}\nb\t{}' "
                     "WHERE id = 9; "
                     "UPDATE lease_settled SET settled = '1' WHERE chunk = 9")
              .ok());
  auto ok = Open(path);
  CHECK(Leases(*ok) == Rows{"b={}"});
  REQUIRE(Put(*ok, {{"c", "{}"}}).ok());
  CHECK(*QueryRawInt(path, "SELECT max(id) FROM lease_chunks") == 10);
}

TEST_CASE("lease chunks: settling writes the bitmap and leaves the lines",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = Open(path);
  REQUIRE(Put(*store, {{"L1", "{1}"}, {"L2", "{2}"}, {"L3", "{3}"}}).ok());
  const std::string lines = "L1\t{1}\nL2\t{2}\nL3\t{3}";
  CHECK(*QueryRawText(path, "SELECT leases FROM lease_chunks") == lines);
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM lease_settled") == 0);
  REQUIRE(Put(*store, {}, {"L2"}).ok());
  CHECK(*QueryRawText(path, "SELECT leases FROM lease_chunks") == lines);
  // Line 1's bit: hex digit 0 has value 1 << 1.
  CHECK(SettledOfChunk1(path) == "2");
  REQUIRE(Put(*store, {}, {"L3"}).ok());
  CHECK(SettledOfChunk1(path) == "6");
  // An unknown id settles nothing and writes nothing.
  REQUIRE(Put(*store, {}, {"L9"}).ok());
  CHECK(SettledOfChunk1(path) == "6");
  // The last line: the chunk and its bitmap go together.
  REQUIRE(Put(*store, {}, {"L1"}).ok());
  CHECK(Chunks(path) == 0);
  CHECK(*QueryRawInt(path, "SELECT count(*) FROM lease_settled") == 0);
}

TEST_CASE("lease chunks: a bitmap past one word reads back as written",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  auto store = Open(path);
  std::vector<LeaseRow> put;
  for (int i = 0; i < 70; ++i) put.push_back({"L" + std::to_string(i), "{}"});
  REQUIRE(Put(*store, put).ok());
  REQUIRE(Put(*store, {}, {"L0", "L63", "L64", "L69"}).ok());
  // Digits 0, 15, 16 and 17: bits 0, 63 (8 in its digit), 64 and 69 (2).
  CHECK(SettledOfChunk1(path) == "1" + std::string(14, '0') + "812");
  store.reset();
  const Rows left = Leases(*Open(path));
  CHECK(left.size() == 66);
  for (const char* gone : {"L0=", "L63=", "L64=", "L69="}) {
    for (const std::string& row : left) CHECK(row.rfind(gone, 0) != 0);
  }
}

TEST_CASE("lease chunks: a bitmap without its chunk is never inherited",
          "[storage]") {
  TempDir dir;
  const std::string path = dir.File("brake.db");
  REQUIRE(Store::Open(path).ok());
  REQUIRE(ExecRawSql(path, "INSERT INTO lease_settled VALUES(4, '1')").ok());
  auto store = Open(path);
  REQUIRE(Put(*store, {{"L1", "{1}"}}).ok());
  CHECK(*QueryRawInt(path, "SELECT min(id) FROM lease_chunks") == 5);
  CHECK(Leases(*store) == Rows{"L1={1}"});
}

}  // namespace
}  // namespace brake

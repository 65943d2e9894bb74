#include "budget/lease_book.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "budget/limiter.h"

namespace brake {
namespace {

constexpr int64_t kBookT0 = 1'000'000'000;
constexpr int64_t kBookTtl = 60'000'000;

void Encode(const Lease& l, std::string* text) { text->append(l.user()); }

struct Drained {
  std::vector<std::string> put;
  std::vector<std::string> deleted;
};

Drained DrainOf(LeaseBook& book) {
  Batch batch;
  book.Drain(&batch, Encode);
  Drained d;
  for (const LeasePuts::Row row : batch.leases_put) {
    d.put.push_back(std::string(row.id) + "@" + std::string(row.json));
  }
  for (std::string_view id : batch.leases_deleted) d.deleted.emplace_back(id);
  return d;
}

using Ids = std::vector<std::string>;

TEST_CASE("lease book: ids count up and are found by number",
          "[lease_book]") {
  LeaseBook book("run-");
  Lease& a = book.Open(kBookT0 + kBookTtl);
  CHECK(book.IdOf(a) == "run-1");
  a.Set(Lease::kUser, "alice");
  CHECK(book.IdOf(book.Open(kBookT0 + kBookTtl)) == "run-2");
  CHECK(book.open() == 2);
  REQUIRE(book.Find("run-1") != nullptr);
  CHECK(book.Find("run-1")->user() == "alice");
  // Only the exact spelling of a number of this run names a lease.
  for (const char* id : {"run-01", "run-", "run-1x", "run-3", "run-0",
                         "walk-1", "run-18446744073709551617", ""}) {
    INFO(id);
    CHECK(book.Find(id) == nullptr);
    CHECK(!book.FindSettled(id).has_value());
  }
}

TEST_CASE("lease book: ids past each power of ten, and after a restore",
          "[lease_book]") {
  LeaseBook book("r");
  for (int n = 1; n <= 1234; ++n) {
    Lease& l = book.Open(kBookT0 + kBookTtl);
    REQUIRE(book.IdOf(l) == "r" + std::to_string(n));
    if (n % 3 == 0) book.Settle(l, Settlement{}, kBookT0);  // not the newest
  }
  CHECK(book.Find("r1000") != nullptr);
  CHECK(book.IdOf(*book.Find("r1000")) == "r1000");
  CHECK(book.Find("r999") == nullptr);

  LeaseBook fresh("r");
  Lease mine;
  mine.Set(Lease::kId, "r99");
  fresh.Restore(std::move(mine));
  CHECK(fresh.IdOf(fresh.Open(kBookT0)) == "r100");
  CHECK(fresh.IdOf(fresh.Open(kBookT0)) == "r101");
}

TEST_CASE("lease book: a drain spells every id, in runs and past gaps",
          "[lease_book]") {
  LeaseBook book("r");
  Ids want;
  for (int n = 1; n <= 1234; ++n) {
    Lease& l = book.Open(kBookT0 + kBookTtl);
    // Runs of open leases broken by settled ones (a lease opened and
    // settled between two drains puts nothing), across 9 -> 10, 99 -> 100
    // and 999 -> 1000.
    if (n % 7 == 0 || (n > 95 && n < 99)) {
      book.Settle(l, Settlement{}, kBookT0);
    } else {
      want.push_back("r" + std::to_string(n) + "@");
    }
  }
  CHECK(DrainOf(book).put == want);
  // Listed again out of order, with gaps, then two new ones.
  for (const char* id : {"r17", "r5", "r6", "r1000"}) {
    REQUIRE(book.Find(id) != nullptr);
    book.MarkChanged(*book.Find(id));
  }
  book.Open(kBookT0 + kBookTtl);
  book.Open(kBookT0 + kBookTtl);
  CHECK(DrainOf(book).put ==
        Ids{"r17@", "r5@", "r6@", "r1000@", "r1235@", "r1236@"});
}

TEST_CASE("lease book: settled leases answer duplicates until forgotten",
          "[lease_book]") {
  LeaseBook book("r");
  book.Open(kBookT0 + kBookTtl);
  book.Open(kBookT0 + kBookTtl);
  book.Settle("r1", Settlement{70, 5, false}, kBookT0);
  CHECK(book.Find("r1") == nullptr);
  REQUIRE(book.FindSettled("r1").has_value());
  CHECK(book.FindSettled("r1")->charged_tokens == 70);
  CHECK(book.open() == 1);
  book.Settle("r1", Settlement{1, 1, false}, kBookT0 + 1);  // no effect
  CHECK(book.FindSettled("r1")->charged_tokens == 70);

  book.ForgetSettledBefore(kBookT0);  // settled at kBookT0: not before it
  CHECK(book.FindSettled("r1").has_value());
  book.ForgetSettledBefore(kBookT0 + 1);
  CHECK(!book.FindSettled("r1").has_value());
  CHECK(book.Find("r2") != nullptr);

  SECTION("an open lease in front keeps later settlements") {
    book.Open(kBookT0 + kBookTtl);  // r3
    book.Settle("r3", Settlement{3, 0, false}, kBookT0);
    book.ForgetSettledBefore(kBookT0 + 10);
    CHECK(book.FindSettled("r3").has_value());  // r2 is still open
    book.Settle("r2", Settlement{}, kBookT0 + 20);
    book.ForgetSettledBefore(kBookT0 + 10);
    CHECK(book.FindSettled("r2").has_value());  // settled after the cutoff
    CHECK(book.FindSettled("r3").has_value());
    book.ForgetSettledBefore(kBookT0 + 21);
    CHECK(!book.FindSettled("r2").has_value());
    CHECK(!book.FindSettled("r3").has_value());
    CHECK(book.IdOf(book.Open(kBookT0 + kBookTtl)) == "r4");  // numbering goes on
  }
}

TEST_CASE("lease book: expiry in order, also after the TTL shrinks",
          "[lease_book]") {
  LeaseBook book("r");
  CHECK(book.NextExpiryUs() == kNever);
  CHECK(book.NextExpired(kBookT0 + 10 * kBookTtl) == nullptr);
  book.Open(kBookT0 + 100);  // r1
  book.Open(kBookT0 + 300);  // r2
  book.Open(kBookT0 + 200);  // r3: a shorter TTL, out of order
  book.Open(kBookT0 + 300);  // r4
  CHECK(book.NextExpiryUs() == kBookT0 + 100);

  std::vector<std::string> order;
  while (Lease* l = book.NextExpired(kBookT0 + 1000)) {
    order.push_back(book.IdOf(*l));
    book.Settle(book.IdOf(*l), Settlement{}, kBookT0 + 1000);
  }
  CHECK(order == Ids{"r1", "r3", "r2", "r4"});
  CHECK(book.NextExpiryUs() == kNever);

  book.Open(kBookT0 + 2000);  // r5
  book.Open(kBookT0 + 3000);  // r6
  book.Settle("r5", Settlement{}, kBookT0 + 1500);  // settled before expiry
  CHECK(book.NextExpiryUs() == kBookT0 + 3000);
  CHECK(book.NextExpired(kBookT0 + 2999) == nullptr);
  REQUIRE(book.NextExpired(kBookT0 + 3000) != nullptr);
  CHECK(book.IdOf(*book.NextExpired(kBookT0 + 3000)) == "r6");
}

TEST_CASE("lease book: drain puts open leases and deletes stored ones",
          "[lease_book]") {
  LeaseBook book("r");
  book.Open(kBookT0 + kBookTtl).Set(Lease::kUser, "a");  // r1
  book.Open(kBookT0 + kBookTtl).Set(Lease::kUser, "b");  // r2
  book.Settle("r2", Settlement{}, kBookT0);  // opened and settled: never stored
  CHECK(book.dirty());
  Drained d = DrainOf(book);
  CHECK(d.put == Ids{"r1@a"});
  CHECK(d.deleted.empty());
  CHECK_FALSE(book.dirty());

  book.MarkChanged(*book.Find("r1"));
  book.MarkChanged(*book.Find("r1"));  // listed once
  CHECK(DrainOf(book).put == Ids{"r1@a"});

  book.Settle("r1", Settlement{}, kBookT0 + 1);
  d = DrainOf(book);
  CHECK(d.put.empty());
  CHECK(d.deleted == Ids{"r1"});
  CHECK(DrainOf(book).deleted.empty());  // deleted once

  SECTION("forgotten before a drain, its row still goes") {
    book.Open(kBookT0 + kBookTtl).Set(Lease::kUser, "c");  // r3
    CHECK(DrainOf(book).put == Ids{"r3@c"});
    book.Settle("r3", Settlement{}, kBookT0 + 2);
    book.ForgetSettledBefore(kBookT0 + kBookTtl);
    CHECK(!book.FindSettled("r3").has_value());
    CHECK(book.dirty());
    CHECK(DrainOf(book).deleted == Ids{"r3"});
  }
}

TEST_CASE("lease book: leases of an earlier run", "[lease_book]") {
  LeaseBook book("new-");
  Lease old;
  old.Set(Lease::kId, "old-7");
  old.Set(Lease::kUser, "alice");
  old.expires_at_us = kBookT0 + 50;
  Lease again;
  again.Set(Lease::kId, old.id());
  again.Set(Lease::kUser, "bob");
  again.expires_at_us = old.expires_at_us;
  book.Restore(std::move(old));
  book.Restore(std::move(again));  // restored twice: the first stays
  CHECK(book.open() == 1);
  REQUIRE(book.Find("old-7") != nullptr);
  CHECK(book.Find("old-7")->user() == "alice");
  CHECK_FALSE(book.dirty());  // its row is stored

  book.Open(kBookT0 + 100);  // new-1
  CHECK(book.NextExpiryUs() == kBookT0 + 50);
  int seen = 0;
  book.ForEachOpen([&](Lease&) { ++seen; });
  CHECK(seen == 2);

  Lease* first = book.NextExpired(kBookT0 + 100);
  REQUIRE(first != nullptr);
  CHECK(book.IdOf(*first) == "old-7");
  book.Settle("old-7", Settlement{9, 0, false}, kBookT0 + 100);
  CHECK(book.FindSettled("old-7")->charged_tokens == 9);
  Drained d = DrainOf(book);
  CHECK(d.deleted == Ids{"old-7"});
  CHECK(d.put.size() == 1);
  book.ForgetSettledBefore(kBookT0 + 101);
  CHECK(!book.FindSettled("old-7").has_value());

  SECTION("an id of this run's spelling moves the numbering past it") {
    LeaseBook fresh("new-");
    Lease mine;
    mine.Set(Lease::kId, "new-41");
    fresh.Restore(std::move(mine));
    CHECK(fresh.IdOf(fresh.Open(kBookT0)) == "new-42");
    CHECK(fresh.open() == 2);
  }
}

TEST_CASE("lease book: a recycled lease object gets a new id and expiry",
          "[lease_book]") {
  LeaseBook book("r");
  Lease& a = book.Open(kBookT0 + kBookTtl);
  a.Set(Lease::kUser, "alice");
  a.expires_at_us = kBookT0 + kBookTtl;
  book.Settle("r1", Settlement{}, kBookT0);
  Lease& b = book.Open(kBookT0 + 2 * kBookTtl);
  CHECK(book.IdOf(b) == "r2");
  CHECK(b.expires_at_us == kBookT0 + 2 * kBookTtl);
  CHECK(book.Find("r1") == nullptr);
}

TEST_CASE("lease book: a steady load reuses every lease object",
          "[lease_book]") {
  LeaseBook book("r");
  constexpr int kOpen = 1000;  // more than kMinPooled
  auto open_all = [&] {
    std::vector<const Lease*> at;
    for (int i = 0; i < kOpen; ++i) at.push_back(&book.Open(kBookT0 + kBookTtl));
    return at;
  };
  auto settle_all = [&] {
    while (Lease* l = book.NextExpired(kBookT0 + kBookTtl)) {
      book.Settle(*l, Settlement{}, kBookT0);
    }
  };
  std::vector<const Lease*> first = open_all();
  settle_all();
  CHECK(book.pooled() == kOpen);
  std::vector<const Lease*> second = open_all();
  CHECK(book.pooled() == 0);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  CHECK(first == second);  // no new object

  // The load falls to one lease at a time: within two spans the pool is
  // back to kMinPooled.
  settle_all();
  for (uint32_t i = 0; i < 2 * LeaseBook::kSpan; ++i) {
    book.Settle(book.Open(kBookT0 + kBookTtl), Settlement{}, kBookT0);
    if (i == LeaseBook::kSpan / 2) CHECK(book.pooled() == kOpen);
  }
  CHECK(book.pooled() == LeaseBook::kMinPooled);
  CHECK(book.open() == 0);
}

}  // namespace
}  // namespace brake

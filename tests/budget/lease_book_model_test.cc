// LeaseBook against a plain model: random opens (some expiring out of
// order), settlements by id and by lease, expiry, forgetting and drains,
// checked against the model as they go. The book's ring, its lease pool and its ids
// counted up in place must never show through.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "budget/lease_book.h"
#include "budget/limiter.h"

namespace brake {
namespace {

constexpr int64_t kT0 = 1'000'000'000;
constexpr int64_t kTtl = 1'000;

struct Model {
  struct Entry {
    int64_t expires_at_us = 0;
    bool settled = false;
    int64_t settled_at_us = 0;
    int64_t tokens = 0;  // the settlement's, and the lease's user tag
    bool forgotten = false;
  };
  std::map<std::string, Entry> leases;  // every id ever opened
  std::vector<std::string> order;       // ids in opening order

  size_t open() const {
    size_t n = 0;
    for (const auto& [id, e] : leases) n += !e.settled;
    return n;
  }
  int64_t next_expiry() const {
    int64_t next = kNever;
    for (const auto& [id, e] : leases) {
      if (!e.settled && (next == kNever || e.expires_at_us < next)) {
        next = e.expires_at_us;
      }
    }
    return next;
  }
};

void CheckOne(LeaseBook& book, const std::string& id, const Model::Entry& e) {
  INFO(id);
  const Lease* open = book.Find(id);
  REQUIRE((open != nullptr) == !e.settled);
  if (open != nullptr) {
    REQUIRE(book.IdOf(*open) == id);
    REQUIRE(open->expires_at_us == e.expires_at_us);
    REQUIRE(open->user() == std::to_string(e.tokens));
  }
  const std::optional<Settlement> done = book.FindSettled(id);
  if (!e.settled || e.forgotten) {
    REQUIRE(!done);
  } else {
    REQUIRE(done);
    REQUIRE(done->charged_tokens == e.tokens);
  }
}

// The open count and next expiry every step; every lease now and then (a
// full check each step would be quadratic).
void CheckAgainst(LeaseBook& book, const Model& model, int step) {
  REQUIRE(book.open() == model.open());
  REQUIRE(book.NextExpiryUs() == model.next_expiry());
  if (step % 64 != 0) return;
  for (const auto& [id, e] : model.leases) CheckOne(book, id, e);
}

TEST_CASE("lease book: a random run matches the model", "[lease_book]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u);
  std::mt19937 rng(seed);
  LeaseBook book("m-");
  Model model;
  int64_t now = kT0;
  int64_t next_number = 1;
  int64_t tag = 0;
  // Stored rows: ids a drain put and no drain deleted since.
  std::set<std::string> stored;
  for (int step = 1; step <= 6000; ++step) {
    now += static_cast<int64_t>(rng() % 3);
    const unsigned op = rng() % 100;
    // Loads that rise and fall, so the pool fills and drains.
    const bool busy = (step / 700) % 2 == 0;
    if (op < (busy ? 45u : 25u)) {  // open
      const int64_t expiry =
          now + (rng() % 8 == 0 ? kTtl / 4 : kTtl);  // 1 in 8 out of order
      Lease& l = book.Open(expiry);
      const std::string id = "m-" + std::to_string(next_number++);
      REQUIRE(book.IdOf(l) == id);
      l.Set(Lease::kUser, std::to_string(++tag));
      model.leases[id] = Model::Entry{expiry, false, 0, tag, false};
      model.order.push_back(id);
    } else if (op < 80) {  // settle one, by id or by the lease
      if (model.order.empty()) continue;
      const std::string& id = model.order[rng() % model.order.size()];
      Model::Entry& e = model.leases[id];
      const int64_t tokens = e.settled ? e.tokens + 1 : e.tokens;
      if (rng() % 2 == 0) {
        book.Settle(id, Settlement{tokens, 0, false}, now);
      } else if (Lease* l = book.Find(id)) {
        book.Settle(*l, Settlement{tokens, 0, false}, now);
      }
      if (!e.settled) {
        e.settled = true;
        e.settled_at_us = now;
      }  // settling again changes nothing
    } else if (op < 88) {  // expiry
      while (Lease* l = book.NextExpired(now)) {
        const std::string id = book.IdOf(*l);
        Model::Entry& e = model.leases.at(id);
        REQUIRE(!e.settled);
        REQUIRE(e.expires_at_us <= now);
        REQUIRE(e.expires_at_us == model.next_expiry());
        book.Settle(*l, Settlement{e.tokens, 0, false}, now);
        e.settled = true;
        e.settled_at_us = now;
      }
    } else if (op < 94) {  // forget settlements older than a TTL
      const int64_t cutoff = now - kTtl;
      book.ForgetSettledBefore(cutoff);
      for (auto& [id, e] : model.leases) {
        if (e.settled && !e.forgotten && !book.FindSettled(id)) {
          REQUIRE(e.settled_at_us < cutoff);  // only what was old enough
          e.forgotten = true;
        }
      }
    } else {  // drain
      Batch batch;
      book.Drain(&batch, [](const Lease& l, std::string* text) {
        text->append(l.user());
      });
      for (const LeasePuts::Row row : batch.leases_put) {
        const std::string id(row.id);
        INFO(id);
        const Model::Entry& e = model.leases.at(id);
        REQUIRE(!e.settled);  // only open leases are put
        REQUIRE(row.json == std::to_string(e.tokens));
        REQUIRE(row.fresh == (stored.count(id) == 0));
        stored.insert(id);
      }
      for (const std::string_view view : batch.leases_deleted) {
        const std::string id(view);
        INFO(id);
        REQUIRE(model.leases.at(id).settled);
        REQUIRE(stored.erase(id) == 1);  // deleted once, and only if put
      }
      CHECK_FALSE(book.dirty());
      // After a drain every stored row is an open lease's: a settled one's
      // delete went with it.
      for (const std::string& id : stored) {
        INFO(id);
        REQUIRE(!model.leases.at(id).settled);
      }
    }
    if (!model.order.empty()) {  // the newest lease, and one at random
      const std::string& newest = model.order.back();
      CheckOne(book, newest, model.leases.at(newest));
      const std::string& any = model.order[rng() % model.order.size()];
      CheckOne(book, any, model.leases.at(any));
    }
    CheckAgainst(book, model, step);
  }
}

}  // namespace
}  // namespace brake

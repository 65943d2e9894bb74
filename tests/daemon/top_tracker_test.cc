// TopTracker: bounded counting of the busiest subjects (space-saving).
#include "daemon/top_tracker.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace brake {
namespace {

std::vector<std::string> Subjects(const std::vector<SubjectActivity>& rows) {
  std::vector<std::string> out;
  for (const SubjectActivity& r : rows) out.push_back(r.subject);
  return out;
}

void Hits(SubjectCounter* c, const std::string& subject, int grants,
          int denials = 0) {
  for (int i = 0; i < grants; ++i) c->Record(subject, true, 10, 1000);
  for (int i = 0; i < denials; ++i) c->Record(subject, false, 10, 1000);
}

AcquireRequest Request(std::string user, std::string task, std::string resource,
                       int64_t tokens) {
  AcquireRequest r;
  r.user = std::move(user);
  r.task = std::move(task);
  r.resource = std::move(resource);
  r.tokens = tokens;
  return r;
}

TEST_CASE("top tracker: counts grants, denials and what grants reserved",
          "[top]") {
  SubjectCounter c(10);
  Hits(&c, "alice", 3, 2);
  auto rows = c.Top(10);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].subject == "alice");
  CHECK(rows[0].grants == 3);
  CHECK(rows[0].denials == 2);
  CHECK(rows[0].tokens == 30);  // denials reserve nothing
  CHECK(rows[0].usd_nano == 3000);
  CHECK(rows[0].uncounted_max == 0);
  CHECK(rows[0].activity() == 5);
}

TEST_CASE("top tracker: busiest first, ties by name, at most limit rows",
          "[top]") {
  SubjectCounter c(10);
  Hits(&c, "carol", 1);
  Hits(&c, "bob", 2, 2);
  Hits(&c, "alice", 4);
  Hits(&c, "dave", 1);
  CHECK(Subjects(c.Top(10)) ==
        std::vector<std::string>{"alice", "bob", "carol", "dave"});
  CHECK(Subjects(c.Top(2)) == std::vector<std::string>{"alice", "bob"});
  CHECK(c.Top(0).empty());
  SECTION("a filter keeps only the subjects it accepts, before the limit") {
    auto keep = [](const std::string& s) { return s != "alice"; };
    CHECK(Subjects(c.Top(2, keep)) == std::vector<std::string>{"bob", "carol"});
  }
}

TEST_CASE("top tracker: never tracks more than its capacity", "[top]") {
  SubjectCounter c(3);
  for (int i = 0; i < 1000; ++i) Hits(&c, "s" + std::to_string(i), 1);
  CHECK(c.size() == 3);
  CHECK(c.capacity() == 3);
  CHECK(c.Top(100).size() == 3);
}

TEST_CASE(
    "top tracker: the least active makes room and a newcomer inherits "
    "its rank",
    "[top]") {
  SubjectCounter c(3);
  Hits(&c, "heavy", 50);
  Hits(&c, "medium", 5);
  Hits(&c, "light", 2);
  Hits(&c, "new", 1);  // full: light (rank 2) goes
  auto rows = c.Top(10);
  CHECK(Subjects(rows) == std::vector<std::string>{"heavy", "medium", "new"});
  CHECK(rows[2].grants == 1);         // exact since it was admitted
  CHECK(rows[2].uncounted_max == 2);  // light's rank
  SECTION("a crowd of occasional subjects does not push out a busy one") {
    // Space-saving keeps every subject with more than (all acquires) /
    // capacity: 118 / 3 < 50.
    for (int i = 0; i < 60; ++i) Hits(&c, "once" + std::to_string(i), 1);
    auto after = c.Top(10);
    CHECK(c.size() == 3);
    CHECK(after[0].subject == "heavy");
    CHECK(after[0].grants == 50);
    CHECK(after[0].uncounted_max == 0);
  }
  SECTION("the evicted subject comes back with an inherited rank") {
    Hits(&c, "light", 1);  // new has rank 3, medium 5: new goes
    auto after = c.Top(10);
    CHECK(Subjects(after) ==
          std::vector<std::string>{"heavy", "medium", "light"});
    CHECK(after[2].grants == 1);
    CHECK(after[2].uncounted_max == 3);
  }
}

TEST_CASE("top tracker: a short list is the head of the full one", "[top]") {
  // Top() stops walking the ranks early; it must still find the busiest.
  SubjectCounter c(10);
  std::minstd_rand random(42);
  for (int i = 0; i < 3000; ++i) {
    // Skewed: low numbers far more often.
    const int n =
        static_cast<int>(random() % 40) * static_cast<int>(random() % 40) / 40;
    c.Record("s" + std::to_string(n), random() % 3 != 0, 1, 1);
  }
  const auto all = c.Top(1000);
  REQUIRE(all.size() == 10);
  for (size_t k = 1; k <= 10; ++k) {
    CAPTURE(k);
    auto head = c.Top(k);
    REQUIRE(head.size() == k);
    for (size_t i = 0; i < k; ++i) CHECK(head[i].subject == all[i].subject);
  }
  for (size_t i = 1; i < all.size(); ++i) {
    CHECK(all[i - 1].activity() >= all[i].activity());
  }
}

TEST_CASE("top tracker: counts saturate instead of overflowing", "[top]") {
  SubjectCounter c(2);
  c.Record("big", true, INT64_MAX, INT64_MAX);
  c.Record("big", true, INT64_MAX, INT64_MAX);
  c.Record("big", true, -5, -5);  // negative amounts count as nothing
  auto rows = c.Top(1);
  CHECK(rows[0].tokens == INT64_MAX);
  CHECK(rows[0].usd_nano == INT64_MAX);
  CHECK(rows[0].grants == 3);
}

TEST_CASE("top tracker: one acquire counts under its user, task and resource",
          "[top]") {
  TopTracker t(100);
  t.Record(Request("alice", "t1", "", 7), true, 500);
  t.Record(Request("alice", "t1", "openai", 0), false, 0);
  auto user = t.Of(TopKind::kUser).Top(5);
  REQUIRE(user.size() == 1);
  CHECK(user[0].grants == 1);
  CHECK(user[0].denials == 1);
  CHECK(user[0].tokens == 7);
  CHECK(user[0].usd_nano == 500);
  CHECK(t.Of(TopKind::kTask).Top(5)[0].subject == "t1");
  auto resource = t.Of(TopKind::kResource).Top(5);
  REQUIRE(resource.size() == 1);  // only the acquire that named one
  CHECK(resource[0].denials == 1);
  CHECK(resource[0].grants == 0);
}

TEST_CASE("top tracker: matches a plain model of space-saving", "[top]") {
  // The model keeps a list and scans it: the lowest rank goes first, among
  // equal ranks the one that reached its rank first.
  struct Model {
    SubjectActivity a;
    int64_t since = 0;  // when it reached its current rank
  };
  std::vector<Model> model;
  // 300: the index table grows several times and evictions erase from
  // long probe runs.
  const size_t capacity = GENERATE(7, 300);
  const unsigned rare = capacity == 7 ? 40 : 2000;
  SubjectCounter c(capacity);
  std::mt19937 rng(7);
  for (int64_t step = 1; step <= 20'000; ++step) {
    // A skewed mix: a few busy subjects and many occasional ones.
    int pick = static_cast<int>(rng() % 100);
    std::string subject = pick < 60 ? "busy" + std::to_string(pick % 4)
                                    : "rare" + std::to_string(rng() % rare);
    bool granted = rng() % 3 != 0;
    c.Record(subject, granted, 5, 1);
    auto it = std::find_if(model.begin(), model.end(), [&](const Model& m) {
      return m.a.subject == subject;
    });
    if (it == model.end()) {
      int64_t inherited = 0;
      if (model.size() >= capacity) {
        auto low = std::min_element(
            model.begin(), model.end(), [](const Model& x, const Model& y) {
              int64_t rx = x.a.uncounted_max + x.a.activity();
              int64_t ry = y.a.uncounted_max + y.a.activity();
              return rx != ry ? rx < ry : x.since < y.since;
            });
        inherited = low->a.uncounted_max + low->a.activity();
        model.erase(low);
      }
      Model m;
      m.a.subject = subject;
      m.a.uncounted_max = inherited;
      model.push_back(m);
      it = model.end() - 1;
    }
    (granted ? it->a.grants : it->a.denials) += 1;
    if (granted) {
      it->a.tokens += 5;
      it->a.usd_nano += 1;
    }
    it->since = step;
    if (step % 97 == 0 || step == 20'000) {
      std::vector<SubjectActivity> want;
      for (const Model& m : model) want.push_back(m.a);
      std::sort(want.begin(), want.end(), [](const auto& x, const auto& y) {
        if (x.activity() != y.activity()) return x.activity() > y.activity();
        return x.subject < y.subject;
      });
      auto got = c.Top(capacity);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("step " << step << " row " << i);
        REQUIRE(got[i].subject == want[i].subject);
        REQUIRE(got[i].grants == want[i].grants);
        REQUIRE(got[i].denials == want[i].denials);
        REQUIRE(got[i].uncounted_max == want[i].uncounted_max);
        REQUIRE(got[i].tokens == want[i].tokens);
      }
    }
  }
}

}  // namespace
}  // namespace brake

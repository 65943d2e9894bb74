// Share: when a daemon calls Redis for one shared limit and how much it
// asks; Shares: the registry's short marks and forgetting; SharedLimiter
// through the engine: a short slice refuses and marks, a grant from Redis
// admits, settlements refund into the slice or run into debt, a new period
// is a new share. Explicit clock values; "Redis" is the test answering.
#include "cluster/share.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "budget/engine.h"
#include "cluster/shared_limiter.h"
#include "cluster/shares.h"
#include "tests/budget/engine_helpers.h"

namespace brake::cluster {
namespace {

using engine_test::kT0;
constexpr int64_t kMs = 1000;
const ShareTuning kTuning;

// Redis's side of one call on a cap holding `left`: grants what it can.
ShareReply CapAnswer(const ShareCall& call, int64_t* left, int64_t others = 0) {
  *left += call.back - call.debt;
  ShareReply r;
  r.granted = call.whole && call.ask > *left
                  ? 0
                  : std::min(call.ask, std::max<int64_t>(0, *left));
  *left -= r.granted;
  r.remaining = *left;
  r.other_nodes = others;
  return r;
}

TEST_CASE("share: a short request makes the next call ask for it",
          "[share]") {
  Share s("k", ShareKind::kCap, 10'000);
  s.Ref();  // a limiter uses it
  CHECK_FALSE(s.Wants(kT0, kTuning));
  s.MarkShort(300, kT0);
  REQUIRE(s.Wants(kT0, kTuning));
  ShareCall call = s.Begin(kT0, kTuning, "c");
  CHECK(call.ask >= 300);
  CHECK(call.ask <= 5'000);  // at most a fair share of what is left
  CHECK(s.in_flight());
  CHECK_FALSE(s.Wants(kT0, kTuning));  // one call at a time
  int64_t left = 10'000;
  s.Finish(CapAnswer(call, &left), kT0 + kMs, kTuning);
  CHECK(s.Take(300, kT0 + kMs));
  CHECK(s.remaining_seen() == left);
}

TEST_CASE("share: a cap with too little left is dry for a while",
          "[share]") {
  Share s("k", ShareKind::kCap, 100);
  s.Ref();
  s.MarkShort(300, kT0);
  ShareCall call = s.Begin(kT0, kTuning, "c");
  int64_t left = 100;
  s.Finish(CapAnswer(call, &left), kT0, kTuning);
  CHECK(s.dry(kT0));
  CHECK_FALSE(s.Take(300, kT0));
  s.MarkShort(300, kT0 + 1);
  CHECK_FALSE(s.Wants(kT0 + 1, kTuning));  // dry: not asked again at once
  CHECK(s.Wants(kT0 + kTuning.dry_recheck_us, kTuning));
}

TEST_CASE("share: unused units go back once idle, all of them once closed",
          "[share]") {
  Share s("k", ShareKind::kCap, 10'000);
  s.Ref();
  s.MarkShort(1'000, kT0);
  ShareCall first = s.Begin(kT0, kTuning, "c");
  int64_t left = 10'000;
  s.Finish(CapAnswer(first, &left), kT0, kTuning);
  REQUIRE(s.Take(400, kT0));
  const int64_t unused = s.available();
  REQUIRE(unused > 0);
  const int64_t idle = kT0 + kTuning.idle_us + 1;
  REQUIRE(s.Wants(idle, kTuning));
  ShareCall back = s.Begin(idle, kTuning, "c");
  CHECK(back.back == unused);
  CHECK(back.ask == 0);
  s.Finish(CapAnswer(back, &left), idle, kTuning);
  CHECK(left == 10'000 - 400);  // only the reservation stays counted
  s.Settle(-400);               // the call was cancelled
  s.Unref();
  REQUIRE(s.closed());
  REQUIRE(s.Wants(idle + 1, kTuning));
  ShareCall last = s.Begin(idle + 1, kTuning, "c");
  CHECK(last.back == 400);
  s.Finish(CapAnswer(last, &left), idle + 1, kTuning);
  CHECK(left == 10'000);
  CHECK_FALSE(s.Wants(idle + 2, kTuning));
}

TEST_CASE("share: a settlement past the slice is a debt the next call pays",
          "[share]") {
  Share s("k", ShareKind::kCap, 10'000);
  s.Ref();
  s.MarkShort(100, kT0);
  ShareCall call = s.Begin(kT0, kTuning, "c");
  int64_t left = 10'000;
  s.Finish(CapAnswer(call, &left), kT0, kTuning);
  const int64_t held = s.slice().held();
  REQUIRE(s.Take(held, kT0));
  s.Settle(250);  // the call cost 250 more than it reserved
  CHECK(s.slice().debt() == 250);
  REQUIRE(s.Wants(kT0, kTuning));
  ShareCall pay = s.Begin(kT0, kTuning, "c");
  CHECK(pay.debt == 250);
  s.Finish(CapAnswer(pay, &left), kT0, kTuning);
  CHECK(s.slice().debt() == 0);
  CHECK(left == 10'000 - held - 250 - (s.slice().held() - held - 250));
}

TEST_CASE("share: a cap that could not serve a request gives its slice "
          "back and asks for the request whole", "[share]") {
  Share s("k", ShareKind::kCap, 1'000);
  s.Ref();
  int64_t left = 100;  // the rest is in other daemons' slices
  s.MarkShort(300, kT0);
  ShareCall first = s.Begin(kT0, kTuning, "c1");
  CHECK_FALSE(first.whole);
  s.Finish(CapAnswer(first, &left), kT0, kTuning);
  CHECK(s.available() == 100);  // too few for the request
  CHECK(s.dry(kT0));

  const int64_t later = kT0 + kTuning.dry_recheck_us;
  s.MarkShort(300, later);
  ShareCall whole = s.Begin(later, kTuning, "c2");
  CHECK(whole.whole);
  CHECK(whole.back == 100);
  CHECK(whole.ask == 300);
  s.Finish(CapAnswer(whole, &left), later, kTuning);
  CHECK(s.available() == 0);  // nothing: the 100 wait in Redis for another
  CHECK(left == 100);

  // Another daemon gave 250 back meanwhile: now it comes whole.
  left += 250;
  const int64_t again = later + kTuning.dry_recheck_us;
  s.MarkShort(300, again);
  ShareCall third = s.Begin(again, kTuning, "c3");
  CHECK(third.whole);
  s.Finish(CapAnswer(third, &left), again, kTuning);
  CHECK(s.available() == 300);
  CHECK(s.Take(300, again));
  // Served: the next call asks as usual.
  s.MarkShort(10, again);
  CHECK_FALSE(s.Begin(again, kTuning, "c4").whole);
}

TEST_CASE("share: near the end each node asks for a fair share", "[share]") {
  Share s("k", ShareKind::kCap, 10'000);
  s.Ref();
  s.MarkShort(10, kT0);
  ShareCall call = s.Begin(kT0, kTuning, "c");
  int64_t left = 1'200;  // other nodes took the rest
  s.Finish(CapAnswer(call, &left, /*others=*/2), kT0, kTuning);
  CHECK(s.nodes_seen() == 3);
  for (int i = 0; i < 50; ++i) REQUIRE(s.Take(s.available(), kT0));
  s.MarkShort(1, kT0);
  ShareCall next = s.Begin(kT0, kTuning, "c");
  CHECK(next.ask <= std::max<int64_t>(1, left / 6));
}

TEST_CASE("share: a call with no answer is resolved before anything else",
          "[share]") {
  int64_t left = 10'000;
  auto leased = [&](Share& s) {
    s.Ref();
    s.MarkShort(500, kT0);
    s.Finish(CapAnswer(s.Begin(kT0, kTuning, "c1"), &left), kT0, kTuning);
    REQUIRE(s.Take(100, kT0));
  };
  SECTION("Redis applied it: the share takes what it was granted") {
    Share s("k", ShareKind::kCap, 10'000);
    leased(s);
    const int64_t held = s.slice().held();
    s.MarkShort(held, kT0);
    ShareCall lost = s.Begin(kT0, kTuning, "c2");
    const ShareReply applied = CapAnswer(lost, &left);  // Redis ran it ...
    s.Fail();                                           // ... the answer was lost
    REQUIRE(s.outcome_unknown());
    REQUIRE(s.Wants(kT0, kTuning));
    ShareCall ask = s.Begin(kT0, kTuning, "c3");
    CHECK(ask.resolve == "c2");
    CHECK(ask.ask == 0);
    CHECK(ask.debt == 0);
    ShareReply r = CapAnswer(ask, &left);
    r.resolved = applied.granted;
    s.Finish(r, kT0, kTuning);
    CHECK_FALSE(s.outcome_unknown());
    CHECK(s.slice().held() == held + applied.granted);
  }
  SECTION("Redis never ran it: what it gave back is the share's again") {
    Share s("k", ShareKind::kCap, 10'000);
    leased(s);
    const int64_t idle = kT0 + kTuning.idle_us + 1;
    ShareCall lost = s.Begin(idle, kTuning, "c2");
    REQUIRE(lost.back > 0);
    CHECK(s.available() == 0);
    s.Fail();
    ShareCall ask = s.Begin(idle, kTuning, "c3");
    CHECK(ask.resolve == "c2");
    ShareReply r = CapAnswer(ask, &left);
    r.resolved = -1;
    s.Finish(r, idle, kTuning);
    CHECK(s.available() == lost.back);
  }
}

TEST_CASE("share: Redis away, a local share is a part of what was left",
          "[share]") {
  Share s("k", ShareKind::kCap, 10'000);
  s.Ref();
  s.MarkShort(100, kT0);
  int64_t left = 10'000;
  s.Finish(CapAnswer(s.Begin(kT0, kTuning, "c1"), &left, /*others=*/3),
           kT0, kTuning);
  REQUIRE(s.nodes_seen() == 4);
  const int64_t before = s.available();
  s.GoLocal(kT0, 1);
  CHECK(s.local());
  CHECK(s.available() == before + left / 4);
  CHECK(s.unreported() == left / 4);
  REQUIRE(s.Take(s.available(), kT0));
  CHECK(s.local_grants() == 1);
  s.EndLocal();
  REQUIRE(s.Wants(kT0, kTuning));
  ShareCall back = s.Begin(kT0, kTuning, "c2");
  CHECK(back.debt == left / 4);  // counted in Redis now
  s.Finish(CapAnswer(back, &left), kT0, kTuning);
  CHECK(s.unreported() == 0);
  CHECK(left >= 0);

  // A share that saw no other slice still divides by the daemons alive.
  Share alone("a", ShareKind::kCap, 9'000);
  alone.Ref();
  alone.MarkShort(1, kT0);
  int64_t alone_left = 9'000;
  alone.Finish(CapAnswer(alone.Begin(kT0, kTuning, "c1"), &alone_left), kT0,
               kTuning);
  REQUIRE(alone.nodes_seen() == 1);
  const int64_t held_before = alone.available();
  alone.GoLocal(kT0, /*live_nodes=*/3);
  CHECK(alone.available() == held_before + alone_left / 3);

  Share never("n", ShareKind::kCap, 10'000);  // no answer ever: no share
  never.Ref();
  never.GoLocal(kT0, 1);
  CHECK(never.available() == 0);
}

TEST_CASE("share: a local bucket refills at its part of the rate",
          "[share]") {
  Share s("b", ShareKind::kBucket, 100);
  s.Ref();
  s.set_limit(ShareLimit{100, 100, 1000, 0});
  s.MarkShort(1, kT0);
  ShareCall call = s.Begin(kT0, kTuning, "c1");
  ShareReply r;
  r.granted = 1;
  r.remaining = 0;
  r.other_nodes = 1;  // two daemons: 50/s each
  s.Finish(r, kT0, kTuning);
  REQUIRE(s.Take(1, kT0));
  s.GoLocal(kT0, 1);
  s.LocalRefill(kT0 + 1'000'000);  // one second later
  CHECK(s.available() == 50);
  s.LocalRefill(kT0 + 10'000'000);  // never above its part of the burst
  CHECK(s.available() == 50);
  CHECK(call.ask >= 1);
}

// The engine with cluster mode's limiters, over a registry the test plays
// Redis for.
struct ClusterEngine {
  Shares shares;
  Engine engine{"L", engine_test::kTtlUs};
  int64_t left = 0;    // Redis's cap: what is left, and what was settled,
  int64_t spent = 0;   // unless `redis` names another daemon's
  int64_t others = 0;  // daemons holding a slice besides this one
  ClusterEngine* redis = this;

  // A daemon of its own Redis holding `cap`, or of `shared`'s.
  explicit ClusterEngine(int64_t cap, ClusterEngine* shared = nullptr)
      : left(cap), redis(shared != nullptr ? shared : this) {
    engine.set_limiter_maker(
        [this](const std::string& scope, SpecRef spec, int64_t now_us) {
          return MakeClusterLimiter(&shares, "p:", scope, std::move(spec),
                                    now_us);
        });
  }
  // Answers every due call as Redis would.
  void Answer(int64_t now_us) {
    std::vector<Share*> due;
    shares.Due(now_us, true, &due);
    for (Share* s : due) {
      ShareCall c = s->Begin(now_us, shares.tuning(), "c");
      ShareReply r = CapAnswer(c, &redis->left, others);
      redis->spent += c.spent;
      r.spent = redis->spent;
      s->Finish(r, now_us, shares.tuning());
    }
  }
};

TEST_CASE("shared limiter: refuses while short, admits from the slice",
          "[share]") {
  using namespace engine_test;
  ClusterEngine c(1'000);
  c.engine.SetPolicy("user:*", MakePolicy({QuotaSpec(
                                   "tok", Resource::kTokens, 1'000,
                                   Period::kTotal)}));
  HeldDenial d = Deny(c.engine, Req("alice", "t1", 600), kT0);
  CHECK(d.limit == "tok");
  CHECK(c.shares.TakeShort());
  CHECK_FALSE(c.shares.TakeShort());  // cleared
  c.Answer(kT0);
  const std::string lease = Grant(c.engine, Req("alice", "t1", 600), kT0);
  Share* s = c.shares.Find("p:cap|user:alice|tok|tokens|0");
  REQUIRE(s != nullptr);
  const int64_t after_grant = s->available();
  Commit(c.engine, lease, 200, kT0);  // 400 back into the slice
  CHECK(s->available() == after_grant + 400);
  // 200 are settled: 900 more can never fit, 800 can once Redis gives
  // this daemon the rest.
  Deny(c.engine, Req("alice", "t2", 900), kT0);
  CHECK_FALSE(c.shares.TakeShort());  // refused by the cap, not the slice
  Deny(c.engine, Req("alice", "t2", 800), kT0);
  CHECK(c.shares.TakeShort());
  c.Answer(kT0);
  Grant(c.engine, Req("alice", "t2", 800), kT0);
  CHECK(c.left == 0);
  Deny(c.engine, Req("alice", "t3", 1), kT0);
  CHECK(c.left >= 0);
}

TEST_CASE("shared limiter: a cap held on another daemon is reserved, one "
          "spent across daemons is spent", "[share]") {
  using namespace engine_test;
  ClusterEngine a(1'000);
  ClusterEngine b(0, &a);
  a.others = b.others = 1;
  for (ClusterEngine* d : {&a, &b}) {
    d->engine.SetPolicy("user:*", MakePolicy({QuotaSpec(
                                      "tok", Resource::kTokens, 1'000,
                                      Period::kTotal)}));
  }
  // Daemon a holds 900 in a lease; b's 200 finds Redis with too little.
  Deny(a.engine, Req("alice", "t1", 900), kT0);
  a.Answer(kT0);
  const std::string big = Grant(a.engine, Req("alice", "t1", 900), kT0);
  Deny(b.engine, Req("alice", "t2", 200), kT0);
  REQUIRE(b.shares.TakeShort());
  b.Answer(kT0);
  HeldDenial held = Deny(b.engine, Req("alice", "t2", 200), kT0 + 1);
  CHECK(held.reason == Reason::kReserved);
  CHECK(held.held >= 800);  // a's lease, and what a's slice holds unused
  CHECK(held.retry_after_us > 0);
  CHECK(held.retry_after_us <= kTuning.dry_recheck_us);

  // a settles at 100 and, idle, gives its slice back with what it spent.
  Commit(a.engine, big, 100, kT0 + 2);
  const int64_t idle = kT0 + kTuning.idle_us + 10;
  a.Answer(idle);
  CHECK(a.spent == 100);
  Deny(b.engine, Req("alice", "t2", 200), idle);  // dry no longer: asks
  b.Answer(idle);
  const std::string second = Grant(b.engine, Req("alice", "t2", 200), idle);
  Commit(b.engine, second, 200, idle);

  // 300 settled across the two: 800 more can never fit, on either.
  Deny(b.engine, Req("alice", "t3", 800), idle + 1);
  b.Answer(idle + 1);
  HeldDenial spent = Deny(b.engine, Req("alice", "t3", 800), idle + 2);
  CHECK(spent.reason == Reason::kQuotaExhausted);
  CHECK(spent.retry_after_us == kNever);  // a total quota
  CHECK(a.spent == 300);
}

TEST_CASE("shared limiter: a token bucket is shared too", "[share]") {
  using namespace engine_test;
  ClusterEngine c(0);
  c.engine.SetPolicy("user:*", MakePolicy({BucketSpec("rps", 10, 1000, 10)}));
  Deny(c.engine, Req("alice", "t1"), kT0);
  CHECK(c.shares.TakeShort());
  Share* s = c.shares.Find("p:bucket|user:alice|rps|requests");
  REQUIRE(s != nullptr);
  CHECK(s->kind() == ShareKind::kBucket);
  ShareCall call = s->Begin(kT0, c.shares.tuning(), "c");
  ShareReply r;
  r.granted = 3;
  s->Finish(r, kT0, c.shares.tuning());
  for (int i = 0; i < 3; ++i) Grant(c.engine, Req("alice", "t1"), kT0);
  Deny(c.engine, Req("alice", "t1"), kT0);
  CHECK(call.ask >= 1);
}

TEST_CASE("shared limiter: a new period is a new share, the old one closes",
          "[share]") {
  using namespace engine_test;
  ClusterEngine c(1'000);
  c.engine.SetPolicy("user:*", MakePolicy({QuotaSpec("daily",
                                                     Resource::kTokens, 1'000)}));
  Deny(c.engine, Req("alice", "t1", 10), kT0);
  c.Answer(kT0);
  Grant(c.engine, Req("alice", "t1", 10), kT0);
  const int64_t tomorrow = kT0 + 14 * kUsPerHour;
  Deny(c.engine, Req("alice", "t1", 10), tomorrow);  // a new key: no slice
  size_t closed = 0;
  c.shares.ForEach([&](const Share& s) { closed += s.closed() ? 1 : 0; });
  CHECK(closed == 1);
  CHECK(c.shares.size() == 2);
}

TEST_CASE("shared limiter: local and shadow limits stay per daemon",
          "[share]") {
  using namespace engine_test;
  LimitSpec local = QuotaSpec("q", Resource::kTokens, 5);
  local.local = true;
  CHECK_FALSE(Shareable(local));
  CHECK_FALSE(Shareable(engine_test::Shadow(QuotaSpec("q", Resource::kTokens, 5))));
  CHECK_FALSE(Shareable(LogSpec("l", Resource::kRequests, 5, 1000)));
  CHECK(Shareable(WindowSpec("w", 5, 1000)));
  ClusterEngine c(0);
  c.engine.SetPolicy("user:*", MakePolicy({local}));
  Grant(c.engine, Req("alice", "t1", 5), kT0);  // no Redis needed
  CHECK(c.shares.size() == 0);
}

}  // namespace
}  // namespace brake::cluster

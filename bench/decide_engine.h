// The engine brake-decide-bench measures: its policies (token buckets on
// global, user:* and task:*), its simulated clock, and the setup that
// creates N subjects. decide_bench.cc times and prints.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench/decide_subjects.h"
#include "budget/engine.h"

namespace brake::bench {

constexpr int kBatch = 1024;
constexpr int64_t kStartUs = 1'780'000'000'000'000;  // a wall-anchored now
constexpr int64_t kLeaseTtlUs = 100'000;  // simulated: 100k decisions
// For the memory figure: settled leases are forgotten after 500 subjects,
// so few are left over (freed but still resident) when RSS is read.
constexpr int64_t kShortLeaseTtlUs = 1000;

inline Policy BucketPolicy(int64_t rate, int64_t per_ms, int64_t burst) {
  LimitSpec spec;
  spec.name = "rps";
  spec.resource = Resource::kRequests;
  spec.algorithm = Algorithm::kTokenBucket;
  spec.rate = rate;
  spec.per_ms = per_ms;
  spec.burst = burst;
  Policy p;
  p.limits.push_back(spec);
  p.json = "{}";
  return p;
}

inline const Policy& Generous() {
  static const Policy p =
      BucketPolicy(1'000'000'000, 1000, 1'000'000'000);  // never denies
  return p;
}

// One request per day, burst 1: a subject that spent its token is denied.
inline const Policy& Stingy() {
  static const Policy p = BucketPolicy(1, 86'400'000, 1);
  return p;
}

struct Bench {
  explicit Bench(int64_t lease_ttl_us)
      : engine("l", lease_ttl_us), lease_ttl_us(lease_ttl_us) {}
  Engine engine;
  int64_t lease_ttl_us;
  int64_t now_us = kStartUs;
  Batch batch;
  AcquireOutcome outcome;  // reused, as the daemon reuses its own

  // Drains the dirty marks and forgets settled leases past the TTL, as the
  // daemon's flush and housekeeping timers do.
  void Housekeep() {
    batch = Batch{};
    (void)engine.Drain(&batch, [](const Lease&, std::string*) {});
    (void)engine.ExpireLeases(now_us);
  }
};

// Policies on global, user:* and task:* (only task:* when !hierarchy); the
// task bucket stingy for the deny case. Creates `subjects` subjects with one
// acquire each: cancelled when `commit` is false (the bucket is refunded),
// else committed (the token stays spent).
inline std::unique_ptr<Bench> MakeBench(int64_t subjects, bool hierarchy,
                                 bool stingy_tasks, bool commit,
                                 int64_t lease_ttl_us = kLeaseTtlUs) {
  auto b = std::make_unique<Bench>(lease_ttl_us);
  if (hierarchy) {
    b->engine.SetPolicy("global", Generous());
    b->engine.SetPolicy("user:*", Generous());
  }
  b->engine.SetPolicy("task:*", stingy_tasks ? Stingy() : Generous());
  AcquireRequest req;
  CommitRequest done;
  for (int64_t i = 0; i < subjects; ++i) {
    SetSubject(&req, i);
    Result<AcquireOutcome> r = b->engine.Acquire(req, ++b->now_us);
    if (!r.ok() || !r.value().granted) {
      std::fprintf(stderr, "brake-decide-bench: setup acquire %lld refused\n",
                   static_cast<long long>(i));
      std::exit(1);
    }
    if (commit) {
      done.lease = r.value().lease;
      (void)b->engine.Commit(done, ++b->now_us);
    } else {
      (void)b->engine.Cancel(r.value().lease, ++b->now_us);
    }
    if (i % kBatch == kBatch - 1) b->Housekeep();
  }
  b->now_us += lease_ttl_us + 1;  // every setup lease is past the TTL
  b->Housekeep();
  return b;
}

}  // namespace brake::bench

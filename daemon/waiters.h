// Waiters: acquires that wait (wait_ms > 0) instead of being refused.
//
// The daemon holds the request, not a thread: a parked waiter is an entry in
// a FairQueue plus one loop timer for all of them, armed for the earliest
// moment anything can change (a waiter's retry time or deadline). Capacity
// that appears otherwise (a lease committed or cancelled) is noticed through
// Poke(). On each wake the queue is served fairly; a waiter is granted only
// when every limit admits it at once, and holds nothing while it waits. A
// waiter past its deadline is answered `timeout`; one whose connection
// closed is dropped.
//
// Bounds: at most `max_per_scope` waiters are bound by one scope, and a
// leaky bucket holds at most its `queue`; beyond that `queue_full` at once.
// A waiter whose earliest possible grant lies beyond its wait_ms is answered
// `timeout` at once, never parked (a spent cap: its own reason). A cap held
// by open leases (`reserved`) is waited for: each settlement wakes the
// queue, and the waiter is granted as soon as it fits. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <uv.h>

#include "budget/engine.h"
#include "budget/fair_queue.h"
#include "daemon/counters.h"
#include "daemon/decider.h"

namespace brake {

struct ParkRequest {
  uint64_t conn = 0;
  nlohmann::json id;  // the request's "id", or null
  AcquireRequest request;
  int64_t wait_ms = 0;
};

class Waiters {
 public:
  // `send(conn, line)` delivers a reply line ('\n' included) to a connection
  // (dropped when it is gone).
  using Send = std::function<void(uint64_t conn, std::string line)>;

  Waiters(uv_loop_t* loop, Decider* decider, std::function<int64_t()> now_us,
          Send send, int64_t max_per_scope);
  ~Waiters();
  Waiters(const Waiters&) = delete;
  Waiters& operator=(const Waiters&) = delete;

  // Handles an acquire with wait_ms > 0: tries it at once (unless others of
  // the same user already wait: then it queues behind them), answers it,
  // or parks it. The answer, now or later, goes through `send`.
  void Acquire(ParkRequest park);
  // Capacity may have appeared: serve the queue on the next loop turn.
  void Poke();
  // Drops every waiter of a closed connection.
  void DropConnection(uint64_t conn);
  // Answers every waiter `unavailable` (the daemon is stopping) and closes
  // the timer; `on_closed` runs once it is closed.
  void Close(std::function<void()> on_closed);

  size_t size() const { return waiters_.size(); }
  // Waiting acquires of a user ("user:U"), or bound by another scope.
  int64_t CountFor(const std::string& scope) const;
  // Called with every answer (not error) given to a waiting acquire, for
  // metrics and `top`, just before it is sent.
  void set_on_answer(std::function<void(const AcquireAnswer&)> f) {
    on_answer_ = std::move(f);
  }
  // Where refusals by max_waiters_per_scope are counted (may be null).
  void set_limit_hits(LimitHits* hits) { limit_hits_ = hits; }

 private:
  struct Waiter {
    uint64_t conn = 0;
    nlohmann::json id;
    AcquireRequest request;
    int64_t enqueued_us = 0;
    int64_t deadline_us = 0;
    int64_t retry_at_us = 0;  // kNever: only a release can help
    HeldDenial last;          // why it waits
    std::string bound_key;    // scope (or scope/limit of a leaky bucket)
    uint64_t tried_epoch = 0;  // engine settlements at the last refusal
  };

  void Wake();
  void Arm();
  // True when the waiter was answered (granted, or refused for good).
  bool Try(uint64_t id, int64_t now_us);
  void Answer(uint64_t id, std::string line);
  // Records the refusal a waiter waits on; the first one binds it to the
  // refusing scope (or leaky bucket) for the queue bounds.
  void Bind(Waiter& w, const Denial& d, int64_t now_us);
  // Refuses a new waiter now with `reason`; nullopt when it may park.
  std::optional<Reason> Admission(const Waiter& w, int64_t wait_ms);
  // The answer to a waiter whose grant lies beyond its deadline: a spent
  // cap's own reason, else timeout.
  static Reason Beyond(const HeldDenial& d);
  // The retry_after of a refusal answered at `now_us` (a held cap's hint).
  static int64_t RetryAfter(const Waiter& w, int64_t now_us);
  // Reports an answer to on_answer_ (`usd_nano`: what a grant reserved).
  void Count(const AcquireRequest& request, bool granted, Reason reason,
             int64_t usd_nano, int64_t waited_us);
  void CountLimitHit();
  void Unbind(const Waiter& w);

  uv_loop_t* loop_;
  Decider* decider_;
  Engine* engine_;
  std::function<int64_t()> now_us_;
  Send send_;
  int64_t max_per_scope_;
  uv_timer_t timer_;
  bool closed_ = false;
  std::function<void()> on_closed_;
  std::function<void(const AcquireAnswer&)> on_answer_;
  LimitHits* limit_hits_ = nullptr;
  uint64_t next_id_ = 1;
  FairQueue queue_;
  std::unordered_map<uint64_t, Waiter> waiters_;
  std::multimap<uint64_t, uint64_t> by_conn_;             // conn -> waiter
  std::unordered_map<std::string, int64_t> bound_count_;  // bound_key -> n
  std::unordered_map<std::string, int64_t> user_count_;   // user -> n
};

}  // namespace brake

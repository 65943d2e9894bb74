#include "daemon/waiters.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "daemon/replies.h"

namespace brake {

using json = nlohmann::json;

Waiters::Waiters(uv_loop_t* loop, Decider* decider,
                 std::function<int64_t()> now_us, Send send,
                 int64_t max_per_scope)
    : loop_(loop),
      decider_(decider),
      engine_(&decider->engine()),
      now_us_(std::move(now_us)),
      send_(std::move(send)),
      max_per_scope_(max_per_scope) {
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
}

Waiters::~Waiters() = default;

void Waiters::Acquire(ParkRequest park) {
  const int64_t now = now_us_();
  const std::string& user = park.request.user;
  if (auto n = user_count_.find(user);
      n != user_count_.end() && n->second >= max_per_scope_) {
    const std::string scope = "user:" + user;
    Denial d{Reason::kQueueFull, scope, "", kNever, ""};
    json reply = json::object();
    FillDenial(d, &reply);
    CountLimitHit();
    Count(park.request, false, d.reason, 0, 0);
    send_(park.conn, OkLine(park.id, std::move(reply)));
    return;
  }
  uint64_t id = next_id_++;
  Waiter w;
  w.conn = park.conn;
  w.id = std::move(park.id);
  w.request = park.request;
  w.enqueued_us = now;
  w.deadline_us = now + park.wait_ms * 1000;
  w.retry_at_us = now;
  waiters_.emplace(id, std::move(w));
  by_conn_.emplace(park.conn, id);
  ++user_count_[user];
  // Queue first, then serve: a newcomer is tried in its fair turn, behind
  // whoever of its user already waits, never ahead of them.
  queue_.Push(id, park.request.user, park.request.task);
  queue_.Serve([this, now](uint64_t wid) { return Try(wid, now); });
  auto it = waiters_.find(id);
  if (it == waiters_.end()) {  // answered at once
    Arm();
    return;
  }
  Waiter& mine = it->second;
  if (mine.bound_key.empty()) {
    // Not offered (others of its task are ahead): learn what binds it
    // without charging anything.
    AcquireRequest probe = mine.request;
    probe.dry_run = true;
    auto outcome = decider_->Acquire(probe, mine.conn, now);
    if (outcome.ok() && !outcome->granted) {
      Bind(mine, outcome->denial, now);
    } else {
      mine.bound_key = "user:" + user;  // waits only for its turn
      ++bound_count_[mine.bound_key];
    }
  }
  if (std::optional<Reason> refuse = Admission(mine, park.wait_ms)) {
    Denial d = mine.last.view();
    d.reason = *refuse;
    d.retry_after_us = RetryAfter(mine, now);
    json reply = json::object();
    FillDenial(d, &reply);
    Count(mine.request, false, d.reason, 0, now - mine.enqueued_us);
    queue_.Remove(id);
    Answer(id, OkLine(mine.id, std::move(reply)));
  }
  Arm();
}

void Waiters::Count(const AcquireRequest& request, bool granted, Reason reason,
                    int64_t usd_nano, int64_t waited_us) {
  if (on_answer_) {
    on_answer_(AcquireAnswer{&request, granted, reason, usd_nano, waited_us});
  }
}

void Waiters::CountLimitHit() {
  if (limit_hits_ != nullptr) limit_hits_->Add(LimitHit::kMaxWaitersPerScope);
}

std::optional<Reason> Waiters::Admission(const Waiter& w, int64_t wait_ms) {
  auto n = bound_count_.find(w.bound_key);
  int64_t ahead = n == bound_count_.end() ? 0 : n->second - 1;  // not itself
  // Held room may come back before the hint: no reason to refuse now.
  int64_t retry = w.retry_at_us == kNever || w.last.reason == Reason::kReserved
                      ? kNever
                      : w.retry_at_us - w.enqueued_us;
  const HeldDenial& d = w.last;
  const LimitSpec* spec = engine_->FindLimit(d.scope, d.limit);
  if (spec != nullptr && spec->algorithm == Algorithm::kLeakyBucket) {
    // Its slot on the bucket's schedule lies behind everyone ahead of it.
    if (ahead >= spec->queue) return Reason::kQueueFull;
    int64_t interval_us = std::max<int64_t>(
        1, spec->per_ms * 1000 / std::max<int64_t>(1, spec->rate));
    if (retry != kNever) retry += ahead * interval_us;
  } else if (ahead >= max_per_scope_) {
    CountLimitHit();
    return Reason::kQueueFull;
  }
  if (retry != kNever && retry > wait_ms * 1000) return Beyond(d);
  return std::nullopt;
}

Reason Waiters::Beyond(const HeldDenial& d) {
  // A spent cap is answered as such: waiting is not what it needs.
  return d.reason == Reason::kQuotaExhausted || d.reason == Reason::kCostCap
             ? d.reason
             : Reason::kTimeout;
}

int64_t Waiters::RetryAfter(const Waiter& w, int64_t now_us) {
  // Held room: the last refusal's hint.
  if (w.last.reason == Reason::kReserved) return w.last.retry_after_us;
  if (w.retry_at_us != kNever) return std::max<int64_t>(0, w.retry_at_us - now_us);
  return kNever;
}

void Waiters::Bind(Waiter& w, const Denial& why, int64_t now_us) {
  w.last = HeldDenial(why);
  const HeldDenial& d = w.last;
  if (w.bound_key.empty()) {
    const LimitSpec* spec = engine_->FindLimit(d.scope, d.limit);
    w.bound_key = spec != nullptr && spec->algorithm == Algorithm::kLeakyBucket
                      ? d.scope + "/" + d.limit
                      : d.scope;
    ++bound_count_[w.bound_key];
  }
  // Room held by leases here comes back when one settles, which wakes
  // every waiter (Poke); held elsewhere (cluster mode) it is asked for
  // again at the hint. Neither is a time to give up at.
  w.retry_at_us = d.retry_after_us == kNever ? kNever : now_us + d.retry_after_us;
}

void Waiters::Unbind(const Waiter& w) {
  if (!w.bound_key.empty()) {
    auto n = bound_count_.find(w.bound_key);
    if (n != bound_count_.end() && --n->second <= 0) bound_count_.erase(n);
  }
  auto u = user_count_.find(w.request.user);
  if (u != user_count_.end() && --u->second <= 0) user_count_.erase(u);
}

bool Waiters::Try(uint64_t id, int64_t now_us) {
  Waiter& w = waiters_.at(id);
  // Refused before, its retry time not yet come and no lease settled since:
  // nothing it waits for can have changed, so don't ask the engine again.
  if (!w.bound_key.empty() && w.tried_epoch == engine_->settlements() &&
      (w.retry_at_us == kNever || w.retry_at_us > now_us)) {
    return false;
  }
  auto outcome = decider_->Acquire(w.request, w.conn, now_us);
  if (!outcome.ok()) {
    Answer(id, ErrorLineWithId(w.id, outcome.status().code(),
                               outcome.status().message()));
    return true;
  }
  if (outcome->granted) {
    json reply = json::object();
    FillAcquireReply(*outcome, (now_us - w.enqueued_us) / 1000, &reply);
    Count(w.request, true, Reason::kRateLimited, outcome->usd_nano,
          now_us - w.enqueued_us);
    Answer(id, OkLine(w.id, std::move(reply)));
    return true;
  }
  const Denial& d = outcome->denial;
  if (d.reason == Reason::kTooLarge ||
      (d.retry_after_us == kNever && d.reason != Reason::kConcurrency)) {
    json reply = json::object();
    FillAcquireReply(*outcome, 0, &reply);
    Count(w.request, false, d.reason, 0, now_us - w.enqueued_us);
    Answer(id, OkLine(w.id, std::move(reply)));
    return true;
  }
  Bind(w, d, now_us);
  w.tried_epoch = engine_->settlements();
  return false;
}

void Waiters::Answer(uint64_t id, std::string line) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  Waiter& w = it->second;
  Unbind(w);
  auto range = by_conn_.equal_range(w.conn);
  for (auto c = range.first; c != range.second; ++c) {
    if (c->second == id) {
      by_conn_.erase(c);
      break;
    }
  }
  uint64_t conn = w.conn;
  waiters_.erase(it);
  send_(conn, std::move(line));
}

int64_t Waiters::CountFor(const std::string& scope) const {
  if (scope.rfind("user:", 0) == 0) {
    auto u = user_count_.find(scope.substr(5));
    return u == user_count_.end() ? 0 : u->second;
  }
  auto b = bound_count_.find(scope);
  return b == bound_count_.end() ? 0 : b->second;
}

void Waiters::Wake() {
  if (closed_) return;
  const int64_t now = now_us_();
  queue_.Serve([this, now](uint64_t id) { return Try(id, now); });
  // Past its deadline, or unable to be granted before it: timeout.
  std::vector<uint64_t> expired;
  for (const auto& [id, w] : waiters_) {
    if (now >= w.deadline_us ||
        (w.retry_at_us != kNever && w.retry_at_us > w.deadline_us &&
         w.last.reason != Reason::kReserved)) {
      expired.push_back(id);
    }
  }
  for (uint64_t id : expired) {
    Waiter& w = waiters_.at(id);
    Denial d = w.last.view();
    d.reason = now >= w.deadline_us ? Reason::kTimeout : Beyond(w.last);
    d.retry_after_us = RetryAfter(w, now);
    json reply = json::object();
    FillDenial(d, &reply);
    reply["waited_ms"] = (now - w.enqueued_us) / 1000;
    Count(w.request, false, d.reason, 0, now - w.enqueued_us);
    queue_.Remove(id);
    Answer(id, OkLine(w.id, std::move(reply)));
  }
  Arm();
}

void Waiters::Arm() {
  if (closed_) return;
  if (waiters_.empty()) {
    uv_timer_stop(&timer_);
    return;
  }
  // Deadlines of all, retry times of the heads only: a waiter behind
  // another in its task's line cannot be granted before it.
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (const auto& [id, w] : waiters_) earliest = std::min(earliest, w.deadline_us);
  queue_.ForEachHead([&](uint64_t id) {
    const Waiter& w = waiters_.at(id);
    if (w.retry_at_us != kNever) earliest = std::min(earliest, w.retry_at_us);
  });
  int64_t delay_us = std::max<int64_t>(0, earliest - now_us_());
  uint64_t delay_ms = static_cast<uint64_t>((delay_us + 999) / 1000);
  uv_timer_start(&timer_, [](uv_timer_t* t) {
    static_cast<Waiters*>(t->data)->Wake();
  }, delay_ms, 0);
}

void Waiters::Poke() {
  if (closed_ || waiters_.empty()) return;
  uv_timer_start(&timer_, [](uv_timer_t* t) {
    static_cast<Waiters*>(t->data)->Wake();
  }, 0, 0);
}

void Waiters::DropConnection(uint64_t conn) {
  auto range = by_conn_.equal_range(conn);
  std::vector<uint64_t> ids;
  for (auto it = range.first; it != range.second; ++it) ids.push_back(it->second);
  for (uint64_t id : ids) {
    Unbind(waiters_.at(id));
    queue_.Remove(id);
    waiters_.erase(id);
  }
  by_conn_.erase(conn);
  Arm();
}

void Waiters::Close(std::function<void()> on_closed) {
  std::vector<uint64_t> ids;
  for (const auto& [id, w] : waiters_) ids.push_back(id);
  for (uint64_t id : ids) {
    queue_.Remove(id);
    Answer(id, ErrorLineWithId(waiters_.at(id).id, ErrorCode::kUnavailable,
                               "braked is stopping"));
  }
  closed_ = true;
  on_closed_ = std::move(on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), [](uv_handle_t* h) {
    auto* self = static_cast<Waiters*>(h->data);
    if (self->on_closed_) self->on_closed_();
  });
}

}  // namespace brake

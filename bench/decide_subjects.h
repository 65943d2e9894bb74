// The subjects of brake-decide-bench's requests, and the orders it asks
// about them in. Subject i is task "t<i>" of user "u<i % kUsers>".
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "budget/engine_types.h"

namespace brake::bench {

constexpr int64_t kUsers = 1000;

// Sets `out` to prefix + decimal `n` without allocating (SSO-sized names).
inline void Name(std::string* out, char prefix, int64_t n) {
  char buf[24];
  buf[0] = prefix;
  auto [end, ec] = std::to_chars(buf + 1, buf + sizeof(buf), n);
  (void)ec;
  out->assign(buf, end);
}

inline void SetSubject(AcquireRequest* req, int64_t i) {
  Name(&req->user, 'u', i % kUsers);
  Name(&req->task, 't', i);
}

// Adds one to the decimal number after the one-letter prefix of `s`, in
// place: the next subject's name for a digit or two of work.
inline void Increment(std::string* s) {
  for (size_t i = s->size(); i > 1;) {
    char& c = (*s)[--i];
    if (c != '9') {
      ++c;
      return;
    }
    c = '0';
  }
  s->insert(1, 1, '1');
}

// The subjects in an order drawn at random (seeded: the same in every run),
// each one's names spelled in advance in that order, so that a request
// reads them from lists walked in step rather than from a table it would
// jump around in (misses of its own, not the engine's).
struct Shuffled {
  explicit Shuffled(int64_t subjects) {
    std::vector<int64_t> order(static_cast<size_t>(subjects));
    for (int64_t i = 0; i < subjects; ++i) order[static_cast<size_t>(i)] = i;
    std::mt19937_64 rng(20261201);
    std::shuffle(order.begin(), order.end(), rng);
    tasks.resize(order.size());
    user_of.resize(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      Name(&tasks[k], 't', order[k]);
      user_of[k] = static_cast<uint16_t>(order[k] % kUsers);
    }
    for (int64_t u = 0; u < kUsers; ++u) Name(&users.emplace_back(), 'u', u);
  }
  std::vector<std::string> tasks;  // the k-th subject's task name
  std::vector<uint16_t> user_of;   // and its user's index in `users`
  std::vector<std::string> users;
};

// The request's subjects in turn from `first`, wrapping at `subjects`: in
// the order they were made (SetSubject's), or in `shuffled` order when
// given. In creation order, the names are spelled by counting in place, so
// that the timed loop measures the decision rather than building names
// (formatting two numbers per request cost 176 instructions, 13 % of a
// denial). Creation order is also memory order (subjects are allocated as
// they are made), which a CPU's own prefetchers follow; shuffled, only the
// engine's Prefetch helps.
class SubjectCursor {
 public:
  SubjectCursor(AcquireRequest* req, int64_t first, int64_t subjects,
                const Shuffled* shuffled)
      : req_(req),
        i_(first % subjects),
        u_(i_ % kUsers),
        subjects_(subjects),
        shuffled_(shuffled) {
    if (shuffled_ != nullptr) {
      SetShuffled();
    } else {
      SetSubject(req_, i_);
    }
  }
  void Next() {
    if (shuffled_ != nullptr) {
      if (++i_ == subjects_) i_ = 0;
      SetShuffled();
      return;
    }
    if (++i_ == subjects_) {
      i_ = u_ = 0;
      SetSubject(req_, 0);
      return;
    }
    if (++u_ == kUsers) {
      u_ = 0;
      Name(&req_->user, 'u', 0);
    } else {
      Increment(&req_->user);
    }
    Increment(&req_->task);
  }

 private:
  void SetShuffled() {
    const auto k = static_cast<size_t>(i_);
    req_->task.assign(shuffled_->tasks[k]);
    req_->user.assign(shuffled_->users[shuffled_->user_of[k]]);
  }

  AcquireRequest* req_;
  int64_t i_, u_;
  const int64_t subjects_;
  const Shuffled* shuffled_;  // nullptr: creation order
};

}  // namespace brake::bench

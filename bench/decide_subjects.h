// The subjects of brake-decide-bench's requests, and the orders it asks
// about them in. Subject i is task "t<i>" of user "u<i % kUsers>".
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "budget/engine_types.h"
#include "common/decimal.h"

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

// The next subject's name: one more in the number after its one letter.
inline void Increment(std::string* s) { IncrementDecimal(s, 1); }

// The subjects in an order drawn at random (seeded: the same in every run),
// each one's names spelled in advance in that order, 16 bytes a subject, so
// that a request reads them from a list walked in step (and prefetched)
// rather than from a table it would jump around in: misses of its own, not
// the engine's.
struct Shuffled {
  struct Names {
    uint16_t user;  // index in `users`
    uint8_t length;
    char task[13];
  };
  static_assert(sizeof(Names) == 16);

  explicit Shuffled(int64_t subjects) {
    std::vector<int64_t> order(static_cast<size_t>(subjects));
    for (int64_t i = 0; i < subjects; ++i) order[static_cast<size_t>(i)] = i;
    std::mt19937_64 rng(20261201);
    std::shuffle(order.begin(), order.end(), rng);
    std::string name;
    for (int64_t i : order) {
      Name(&name, 't', i);
      Names& n = names.emplace_back();
      n.user = static_cast<uint16_t>(i % kUsers);
      n.length = static_cast<uint8_t>(name.size());  // "t" + 12 digits at most
      name.copy(n.task, sizeof n.task);
    }
    for (int64_t u = 0; u < kUsers; ++u) Name(&users.emplace_back(), 'u', u);
  }
  std::vector<Names> names;  // the k-th subject's
  std::vector<std::string> users;
};

// The request's subjects in turn from `first`, wrapping at `subjects`: in
// the order they were made (SetSubject's), or in `shuffled` order when
// given. In creation order, the names are spelled by counting in place, so
// that the timed loop measures the decision rather than building names.
// Creation order is also memory order (subjects are allocated as
// they are made), which a CPU's own prefetchers follow; shuffled, only the
// engine's Prefetch helps.
class SubjectCursor {
 public:
  // `task_only`: only task() is read (a request announced ahead, whose
  // name Engine::Prefetch takes as a view, as braked's takes it from the
  // line): in shuffled order nothing is copied into `req`.
  SubjectCursor(AcquireRequest* req, int64_t first, int64_t subjects,
                const Shuffled* shuffled, bool task_only = false)
      : req_(req),
        i_(first % subjects),
        u_(i_ % kUsers),
        subjects_(subjects),
        shuffled_(shuffled),
        task_only_(task_only) {
    if (shuffled_ != nullptr) {
      SetShuffled();
    } else {
      SetSubject(req_, i_);
    }
  }
  // The current task's name (valid until the next Next()).
  std::string_view task() const {
    return shuffled_ != nullptr && task_only_ ? task_ : req_->task;
  }
  void Next() {
    if (subjects_ == 1) return;  // the names stay
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
    const std::vector<Shuffled::Names>& all = shuffled_->names;
    __builtin_prefetch(&all[std::min(k + 64, all.size() - 1)]);
    const Shuffled::Names& n = all[k];
    if (task_only_) {
      task_ = std::string_view(n.task, n.length);
      return;
    }
    Put(&req_->task, n.task, n.length);
    const std::string& user = shuffled_->users[n.user];
    Put(&req_->user, user.data(), user.size());
  }
  // s = [p, p + n), in place (a name fits the string's inline bytes).
  // Names under 8 bytes (subjects up to a million) are moved inline, in
  // two overlapping words: memcpy of a length not known at compile time is
  // a call into libc, a cost the decision does not have.
  static void Put(std::string* s, const char* p, size_t n) {
    if (s->size() != n) s->resize(n);
    char* d = s->data();
    if (n >= 8) {  // "t" and 7 digits: past a million subjects
      std::memcpy(d, p, n);
    } else if (n >= 4) {
      std::memcpy(d, p, 4);
      std::memcpy(d + n - 4, p + n - 4, 4);
    } else {
      for (size_t i = 0; i < n; ++i) d[i] = p[i];
    }
  }

  AcquireRequest* req_;
  int64_t i_, u_;
  const int64_t subjects_;
  const Shuffled* shuffled_;  // nullptr: creation order
  const bool task_only_;
  std::string_view task_;  // task_only_ in shuffled order: into `shuffled_`
};

}  // namespace brake::bench

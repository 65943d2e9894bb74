// The load threads of RunLoad (bench/load.h): a Worker drives its share of
// the connections through its own epoll set, keeps every slot's request in
// flight, matches replies by id and counts them into its own LoadResult,
// which RunLoad merges after the threads are joined. Internal to load.cc;
// what it keeps per connection is in bench/load_state.h.
#pragma once

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/byte_buffer.h"
#include "bench/load.h"
#include "bench/load_state.h"
#include "bench/reply_scan.h"
#include "bench/unix_socket.h"

namespace brake::bench::load_worker {

class Worker {
 public:
  Worker(const LoadConfig& config, Shared* shared, std::vector<Conn*> conns,
         size_t ms_buckets)
      : config_(config), shared_(shared), conns_(std::move(conns)) {
    result_.grants_per_ms.assign(ms_buckets, 0);
    result_.grant_sends_per_ms.assign(ms_buckets, 0);
    result_.aligned_received.assign(shared_->aligned_windows, 0);
    result_.aligned_certain.assign(shared_->aligned_windows, 0);
    result_.grant_times_recorded = config_.wait_ms > 0 || config_.once;
    late_after_us_ = (config_.wait_ms + kLateSlackMs) * 1000;
    commit_tokens_ = ",\"tokens\":" + std::to_string(config_.tokens) + "}\n";
  }

  // Runs until the drain ends or any thread fails; a failure is reported
  // through shared->Fail.
  void Run() {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      shared_->Fail(std::string("epoll_create1: ") + std::strerror(errno));
      return;
    }
    for (Conn* c : conns_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = c;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        shared_->Fail(std::string("epoll_ctl: ") + std::strerror(errno));
        close(epoll_fd_);
        return;
      }
    }
    // With --once the connections idle through the warm-up (time for the
    // server to accept them all) and send at the measured window's start.
    bool started = false;
    auto start = [&] {
      started = true;
      for (Conn* c : conns_) {
        Fill(c);
        if (!Flush(c)) return;
      }
    };
    if (!config_.once) start();
    epoll_event events[256];
    while (!shared_->failed.load(std::memory_order_relaxed)) {
      const int64_t now = NowNs();
      if (!started && now >= shared_->measure_start_ns) {
        start();
        continue;
      }
      if (!draining_ && now >= shared_->measure_end_ns) draining_ = true;
      if (draining_ && (in_flight_ == 0 || now >= shared_->drain_end_ns)) {
        break;
      }
      if (started && config_.once && in_flight_ == 0) break;  // All answered.
      const int64_t until = !started    ? shared_->measure_start_ns
                            : draining_ ? shared_->drain_end_ns
                                        : shared_->measure_end_ns;
      const int timeout_ms = static_cast<int>(
          std::clamp<int64_t>((until - now + kNsPerMs - 1) / kNsPerMs, 0, 50));
      const int n = epoll_wait(epoll_fd_, events, 256, timeout_ms);
      if (n < 0) {
        if (errno == EINTR) continue;
        shared_->Fail(std::string("epoll_wait: ") + std::strerror(errno));
        break;
      }
      for (int i = 0; i < n; ++i) {
        Conn* c = static_cast<Conn*>(events[i].data.ptr);
        if ((events[i].events & EPOLLOUT) && !Flush(c)) break;
        if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !Read(c)) {
          break;
        }
      }
    }
    result_.undrained = static_cast<uint64_t>(in_flight_);
    close(epoll_fd_);
  }

  LoadResult& result() { return result_; }
  Counters& denials() { return denials_; }
  Counters& errors() { return errors_; }
  Counters& commit_errors() { return commit_errors_; }

 private:
  void Enqueue(Conn* c, SlotKind kind, std::string_view lease) {
    const uint32_t slot = c->free_slots.back();
    c->free_slots.pop_back();
    const uint64_t id =
        c->seq++ * static_cast<uint64_t>(c->slots.size()) + slot;
    c->slots[slot] = Slot{id, 0, 0, kind, true};
    if (kind == SlotKind::kDecision) ++c->acquires_sent;
    c->unstamped.push_back(slot);
    ++c->in_flight;
    ++in_flight_;

    c->out.Append("{\"id\":");
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), id);
    c->out.Append(std::string_view(digits, static_cast<size_t>(end - digits)));
    if (kind == SlotKind::kCommit) {
      c->out.Append(",\"op\":\"commit\",\"lease\":\"");
      c->out.Append(lease);  // Raw JSON string content, escapes intact.
      c->out.Append('"');
      c->out.Append(commit_tokens_);
    } else if (config_.spread && config_.op == BenchOp::kAcquire) {
      c->out.Append(c->spread_head);
      const auto [end2, ec2] =
          std::to_chars(digits, digits + sizeof(digits), c->next_task);
      c->out.Append(
          std::string_view(digits, static_cast<size_t>(end2 - digits)));
      c->out.Append(c->spread_tail);
      const int64_t tasks =
          config_.tasks > 0 ? config_.tasks : config_.connections;
      c->next_task += config_.connections;
      if (c->next_task >= tasks) c->next_task = c->index % tasks;
    } else {
      c->out.Append(c->request_tail);
    }
  }

  // Commits `lease` now, or with --hold keeps it and commits one of those
  // kept or it, drawn at random, once more than `hold` would be kept.
  void Commit(Conn* c, std::string_view lease) {
    const size_t hold = static_cast<size_t>(config_.hold);
    if (c->held.size() < hold) {
      c->held.emplace_back(lease);
      return;
    }
    if (hold > 0) {
      uint64_t& x = c->pick_state;
      if (x == 0) x = 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(c->index) + 1);
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const size_t k = static_cast<size_t>(x % (hold + 1));
      if (k < hold) {
        Enqueue(c, SlotKind::kCommit, c->held[k]);  // copies it out
        c->held[k].assign(lease);
        return;
      }
    }
    Enqueue(c, SlotKind::kCommit, lease);
  }

  void Fill(Conn* c) {
    if (draining_) return;
    while (c->in_flight < config_.depth &&
           !(config_.once && c->acquires_sent >= config_.depth)) {
      Enqueue(c, SlotKind::kDecision, {});
    }
  }

  void SetWantWrite(Conn* c, bool want) {
    if (c->want_write == want) return;
    c->want_write = want;
    epoll_event ev{};
    ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
    ev.data.ptr = c;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  }

  // Stamps what was queued with the send time and writes as much as the
  // socket takes. False (after shared->Fail) when the connection failed.
  bool Flush(Conn* c) {
    if (!c->unstamped.empty()) {
      const int64_t now = NowNs();
      const int64_t real_us = RealNowUs();
      for (uint32_t slot : c->unstamped) {
        c->slots[slot].send_ns = now;
        c->slots[slot].send_real_us = real_us;
      }
      c->unstamped.clear();
    }
    switch (SendQueued(c->fd, &c->out)) {
      case SendResult::kSent:
        SetWantWrite(c, false);
        return true;
      case SendResult::kWouldBlock:
        SetWantWrite(c, true);
        return true;
      case SendResult::kFailed:
        break;
    }
    return Lost(c, errno);
  }

  bool Lost(Conn* c, int err) {
    const int64_t now = NowNs();
    std::string what = err == 0 || err == EPIPE || err == ECONNRESET
                           ? "closed by the server"
                           : std::string("failed: ") + std::strerror(err);
    char when[32];
    std::snprintf(when, sizeof(when), "%.3f", shared_->SecondsIn(now));
    shared_->Fail("connection " + std::to_string(c->index) + " " + what + " " +
                  when + " s into the run, with " +
                  std::to_string(c->in_flight) + " requests in flight");
    return false;
  }

  bool Read(Conn* c) {
    while (true) {
      char* dst = c->in.Prepare(kReadChunk);
      const ssize_t n = recv(c->fd, dst, kReadChunk, 0);
      if (n == 0) return Lost(c, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return Lost(c, errno);
      }
      const int64_t now = NowNs();
      const int64_t real_us = RealNowUs();
      c->in.Commit(static_cast<size_t>(n));
      const std::string_view data = c->in.view();
      size_t begin = 0;
      while (true) {
        const void* nl =
            std::memchr(data.data() + begin, '\n', data.size() - begin);
        if (nl == nullptr) break;
        const size_t end =
            static_cast<size_t>(static_cast<const char*>(nl) - data.data());
        OnReply(c, data.substr(begin, end - begin), now, real_us);
        begin = end + 1;
      }
      c->in.Consume(begin);
      if (c->in.size() > kMaxReplyBytes) {
        shared_->Fail("connection " + std::to_string(c->index) +
                      ": a reply line exceeds " +
                      std::to_string(kMaxReplyBytes) + " bytes");
        return false;
      }
      if (static_cast<size_t>(n) < kReadChunk) break;
    }
    Fill(c);
    return Flush(c);
  }

  Slot* Match(Conn* c, const ScannedReply& r) {
    if (r.has_id) {
      Slot& s = c->slots[r.id % c->slots.size()];
      return s.busy && s.id == r.id ? &s : nullptr;
    }
    if (r.kind != ReplyKind::kError) return nullptr;
    // An error without an id (bad_json cannot know it) answers the oldest
    // request, since non-waiting requests are answered in order.
    Slot* oldest = nullptr;
    for (Slot& s : c->slots) {
      if (s.busy && (oldest == nullptr || s.id < oldest->id)) oldest = &s;
    }
    return oldest;
  }

  // Counts a grant received at CLOCK_REALTIME `real_us` for a request sent
  // at `send_real_us` in the aligned windows.
  void CountAligned(int64_t send_real_us, int64_t real_us) {
    const int64_t w = shared_->window_us;
    const int64_t received = real_us / w - shared_->first_window;
    const int64_t sent = send_real_us / w - shared_->first_window;
    if (received < 0 ||
        static_cast<uint64_t>(received) >= result_.aligned_received.size()) {
      return;
    }
    ++result_.aligned_received[static_cast<size_t>(received)];
    if (sent == received) {
      ++result_.aligned_certain[static_cast<size_t>(received)];
    }
  }

  void OnReply(Conn* c, std::string_view line, int64_t now, int64_t real_us) {
    if (line.empty() || line == "\r") return;
    const ScannedReply r = ScanReply(line);
    const bool counted =
        now >= shared_->measure_start_ns && now < shared_->measure_end_ns;
    Slot* slot = Match(c, r);
    if (slot == nullptr) {
      if (counted) {
        ++result_.errors;
        ++result_.unmatched;
        errors_.Add("unmatched_id");
      }
      return;
    }
    const SlotKind kind = slot->kind;
    const int64_t send_ns = slot->send_ns;
    const int64_t send_real_us = slot->send_real_us;
    const uint64_t latency_ns =
        static_cast<uint64_t>(std::max<int64_t>(0, now - slot->send_ns));
    const uint64_t latency_us = (latency_ns + 500) / 1000;
    slot->busy = false;
    c->free_slots.push_back(static_cast<uint32_t>(slot - c->slots.data()));
    --c->in_flight;
    --in_flight_;

    if (kind == SlotKind::kCommit) {
      if (!counted) return;
      if (r.kind == ReplyKind::kError) {
        ++result_.commit_errors;
        commit_errors_.Add(r.reason);
      } else {
        ++result_.commits_ok;
        result_.commit_latency.Record(latency_ns);
      }
      return;
    }

    if (counted) {
      ++result_.decisions;
      result_.latency.Record(latency_ns);
    }
    if (config_.op == BenchOp::kAcquire) {
      ++result_.answers;
      result_.max_answer_us = std::max(result_.max_answer_us, latency_us);
      if (r.kind == ReplyKind::kGranted) {
        result_.max_grant_answer_us =
            std::max(result_.max_grant_answer_us, latency_us);
      } else if (r.kind == ReplyKind::kDenied) {
        result_.max_denial_answer_us =
            std::max(result_.max_denial_answer_us, latency_us);
      }
      if (latency_us > static_cast<uint64_t>(late_after_us_)) {
        ++result_.late_answers;
      }
    }
    switch (r.kind) {
      case ReplyKind::kGranted:
        if (counted) {
          ++result_.grants;
          ++c->grants;
          if (result_.grant_times_recorded &&
              result_.grant_times_us.size() < kMaxGrantTimes) {
            result_.grant_times_us.push_back(
                (now - shared_->measure_start_ns) / 1000);
          }
          CountAligned(send_real_us, real_us);
          const size_t ms =
              static_cast<size_t>((now - shared_->measure_start_ns) / kNsPerMs);
          if (ms < result_.grants_per_ms.size()) ++result_.grants_per_ms[ms];
          if (send_ns < shared_->measure_start_ns) {
            ++result_.grants_sent_before;
          } else {
            const size_t sent_ms = static_cast<size_t>(
                (send_ns - shared_->measure_start_ns) / kNsPerMs);
            if (sent_ms < result_.grant_sends_per_ms.size()) {
              ++result_.grant_sends_per_ms[sent_ms];
            }
          }
        }
        if (config_.commit) {
          if (!r.lease.empty()) {
            Commit(c, r.lease);
          } else if (counted) {
            ++result_.commit_errors;
            commit_errors_.Add("grant_without_lease");
          }
        }
        break;
      case ReplyKind::kDenied:
        if (counted) {
          ++result_.denials;
          denials_.Add(r.reason);
        }
        break;
      case ReplyKind::kError:
        if (counted) {
          ++result_.errors;
          errors_.Add(r.reason.empty() ? std::string_view("no_code")
                                       : r.reason);
        }
        break;
      case ReplyKind::kOk:
        if (counted) ++result_.ok_other;
        break;
      case ReplyKind::kOther:
        if (counted) ++result_.echoed;
        break;
    }
  }

  const LoadConfig& config_;
  Shared* shared_;
  std::vector<Conn*> conns_;
  std::string commit_tokens_;
  int epoll_fd_ = -1;
  bool draining_ = false;
  int64_t in_flight_ = 0;
  int64_t late_after_us_ = 0;
  LoadResult result_;
  Counters denials_;
  Counters errors_;
  Counters commit_errors_;
};

}  // namespace brake::bench::load_worker

// Crowd: many raw connections to one braked socket, driven from one thread
// with poll(2), for tests of hostile clients: a thousand connections at
// once, clients that write without ever reading, clients that send a byte
// every few seconds.
//
// Every member is a non-blocking Unix stream socket. The crowd keeps what
// each member read and when (CLOCK_MONOTONIC ms) its stream ended: the
// daemon closed it, or a send failed because the daemon had closed it.
// Members are never closed by the crowd before it is destroyed, so the
// daemon alone decides when a connection ends.
//
// One thread at a time; a crowd may be handed to another thread as a whole
// (e.g. Flood() in a thread while the test thread talks to the daemon).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brake::integration {

class Crowd {
 public:
  // Connects `n` times to `socket_path`; throws std::runtime_error naming
  // the connect that failed (e.g. out of descriptors).
  Crowd(const std::string& socket_path, size_t n);
  ~Crowd();  // closes every member
  Crowd(const Crowd&) = delete;
  Crowd& operator=(const Crowd&) = delete;

  size_t size() const { return members_.size(); }
  // Members whose stream has ended.
  size_t closed_count() const;
  // What member `i` read so far.
  const std::string& received(size_t i) const { return members_[i].in; }
  // When member `i`'s stream ended (MonoMs()), or -1 while it is open.
  int64_t closed_at_ms(size_t i) const { return members_[i].closed_at_ms; }

  // Sends `bytes` to every open member, as much as its socket takes now
  // (the rest is dropped: for one-byte dribbles it all fits).
  void SendToOpen(std::string_view bytes);
  // Reads whatever has arrived on open members, waiting up to `timeout_ms`
  // for the first of it.
  void Pump(int64_t timeout_ms);
  // Pumps until every member's stream has ended; false when some are still
  // open after `timeout_ms`.
  bool WaitAllClosed(int64_t timeout_ms);
  // Writes `chunk` to every open member again and again, never reading,
  // until each one's send fails (the daemon closed it) or `timeout_ms`
  // passes; then reads what a closed member was sent. Returns the bytes
  // sent in all.
  uint64_t Flood(std::string_view chunk, int64_t timeout_ms);

 private:
  struct Member {
    int fd = -1;
    std::string in;
    int64_t closed_at_ms = -1;
  };
  void MarkClosed(Member& m);
  // Reads what member `m` has; marks it closed at end of stream.
  void ReadSome(Member& m);

  std::vector<Member> members_;
};

}  // namespace brake::integration

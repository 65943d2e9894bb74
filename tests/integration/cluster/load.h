// Load: client threads against the daemons of a ClusterFixture, each in a
// loop of acquire, then commit (a random part of what was reserved) when
// granted, for the failure tests. Every answer's latency is recorded with
// when it came, so a test can look at a stretch of time (while Redis was
// away, after it came back). Threads start at construction and stop at
// Stop() or destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster/cluster_fixture.h"

namespace brake::integration {

struct Answer {
  int64_t sent_ms = 0;      // MonoMs() when the acquire was sent
  int64_t latency_ms = 0;
  size_t daemon = 0;
  std::string user;
  int64_t tokens = 0;
  bool granted = false;
  std::string error;        // the error code, "" for an answer
};

class Load {
 public:
  // `per_daemon` threads on each daemon; thread t of daemon d asks for
  // `users[(d * per_daemon + t) % users.size()]`, `tokens` a call. Daemons
  // listed in `skip` get no threads.
  Load(ClusterFixture& cluster, int per_daemon, std::vector<std::string> users,
       int64_t tokens);
  ~Load();
  void Stop();

  // Every answer so far (a copy).
  std::vector<Answer> Answers() const;
  // Tokens committed, in all, by user.
  int64_t Committed(const std::string& user) const;
  // Drops the threads talking to daemon `d` (before killing it).
  void StopDaemon(size_t d);

 private:
  void Run(size_t daemon, std::string user, std::atomic<bool>* stop,
           uint64_t seed);
  void Loop(size_t daemon, const std::string& user, std::atomic<bool>* stop,
            uint64_t seed);

  ClusterFixture& cluster_;
  int64_t tokens_;
  mutable std::mutex mu_;
  std::vector<Answer> answers_;
  std::vector<std::pair<std::string, int64_t>> committed_;
  std::vector<std::unique_ptr<std::atomic<bool>>> stops_;  // one per daemon
  std::vector<std::pair<size_t, std::thread>> threads_;
};

}  // namespace brake::integration

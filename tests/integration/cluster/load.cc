#include "tests/integration/cluster/load.h"

#include <random>

namespace brake::integration {

Load::Load(ClusterFixture& cluster, int per_daemon,
           std::vector<std::string> users, int64_t tokens)
    : cluster_(cluster), tokens_(tokens) {
  for (size_t d = 0; d < cluster.size(); ++d) {
    stops_.push_back(std::make_unique<std::atomic<bool>>(false));
  }
  for (size_t d = 0; d < cluster.size(); ++d) {
    for (int t = 0; t < per_daemon; ++t) {
      const std::string& user = users[(d * per_daemon + t) % users.size()];
      threads_.emplace_back(d, std::thread(&Load::Run, this, d, user,
                                           stops_[d].get(), d * 1000 + t));
    }
  }
}

Load::~Load() { Stop(); }

void Load::Stop() {
  for (auto& s : stops_) *s = true;
  for (auto& [d, t] : threads_) {
    if (t.joinable()) t.join();
  }
}

void Load::StopDaemon(size_t d) {
  *stops_[d] = true;
  for (auto& [daemon, t] : threads_) {
    if (daemon == d && t.joinable()) t.join();
  }
}

std::vector<Answer> Load::Answers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return answers_;
}

int64_t Load::Committed(const std::string& user) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t sum = 0;
  for (const auto& [u, n] : committed_) {
    if (u == user) sum += n;
  }
  return sum;
}

void Load::Run(size_t daemon, std::string user, std::atomic<bool>* stop,
               uint64_t seed) {
  // An exception must not leave a thread (std::terminate would leave the
  // daemons running and the test's output unread): it ends this client,
  // recorded as an answer with an error the checks count.
  const int64_t started_ms = MonoMs();
  try {
    Loop(daemon, user, stop, seed);
  } catch (const std::exception& e) {
    Answer a;
    a.daemon = daemon;
    a.user = user;
    a.sent_ms = started_ms;
    a.latency_ms = MonoMs() - started_ms;
    a.error = std::string("harness: ") + e.what();
    std::lock_guard<std::mutex> lock(mu_);
    answers_.push_back(std::move(a));
  }
}

void Load::Loop(size_t daemon, const std::string& user, std::atomic<bool>* stop,
                uint64_t seed) {
  std::mt19937_64 rng(seed);
  Client c = cluster_.Connect(daemon);
  int n = 0;
  while (!*stop) {
    Answer a;
    a.daemon = daemon;
    a.user = user;
    a.tokens = tokens_;
    a.sent_ms = MonoMs();
    json r = c.Call({{"op", "acquire"},
                     {"user", user},
                     {"task", user + "-d" + std::to_string(daemon) + "-" +
                                  std::to_string(seed) + "-" +
                                  std::to_string(n++ % 8)},
                     {"tokens", tokens_}});
    a.latency_ms = MonoMs() - a.sent_ms;
    if (r["ok"] != true) {
      a.error = r.contains("error") ? r["error"].value("code", "?") : "?";
    } else {
      a.granted = r["granted"] == true;
    }
    int64_t used = 0;
    if (a.granted) {
      used = std::uniform_int_distribution<int64_t>(0, tokens_)(rng);
      json done = c.Call({{"op", "commit"}, {"lease", r["lease"]},
                          {"tokens", used}});
      if (done["ok"] != true) used = -1;  // counted as an error below
    }
    const bool granted = a.granted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (used > 0) committed_.emplace_back(user, used);
      if (used < 0) a.error = "commit failed";
      answers_.push_back(std::move(a));
    }
    if (!granted) SleepMs(2);
  }
}

}  // namespace brake::integration

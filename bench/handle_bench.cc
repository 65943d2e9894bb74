// brake-handle-bench: the cost of one request line through
// Dispatcher::Handle (parse, validate, decide, reply), in process: no socket
// and no storage thread. It shows what the JSON handling adds on top of the
// decision that brake-decide-bench times.
//
// The policy is bench/compare's: one token bucket on task:* that never
// denies (rate and burst 1e9). Each iteration sends an acquire line as
// brake-bench does ({"id":N,"op":"acquire","user":"bench","task":"tK",
// "tokens":100}, K round-robin over --subjects), then commits its lease
// ({"id":N,"op":"commit","lease":"...","tokens":90,"latency_ms":120,
// "outcome":"ok"}). Every 1,024 iterations the engine and the breakers are
// drained and settled leases past the TTL forgotten, as the daemon's timers
// do (not timed). The clock is simulated: 1 us per line.
//
// The two calls are made from TimedAcquire and TimedCommit, which callgrind
// can collect alone (--toggle-collect). --slow turns the fast path off, so
// one binary gives both paths.
//
// Exit codes: 0 ok, 1 error, 2 usage.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "budget/engine.h"
#include "daemon/config.h"
#include "daemon/counters.h"
#include "daemon/dispatcher.h"

// Counts operator new calls while `g_counting` is set (the timed calls).
namespace {
bool g_counting = false;
int64_t g_news = 0;
// Distinct side effects keep the linker from folding the two timed
// functions into one (callgrind must tell them apart).
volatile int64_t g_acquires = 0;
volatile int64_t g_commits = 0;
}  // namespace

void* operator new(size_t n) {
  if (g_counting) ++g_news;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace brake::bench {
namespace {

constexpr int kBatch = 1024;
constexpr int64_t kStartUs = 1'780'000'000'000'000;

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

[[gnu::noinline]] void TimedAcquire(Dispatcher& d, const Peer& peer,
                                    const std::string& line, int64_t now_us,
                                    std::string* out) {
  g_counting = true;
  d.Handle(peer, line, now_us, out);
  g_counting = false;
  g_acquires = g_acquires + 1;
}

[[gnu::noinline]] void TimedCommit(Dispatcher& d, const Peer& peer,
                                   const std::string& line, int64_t now_us,
                                   std::string* out) {
  g_counting = true;
  d.Handle(peer, line, now_us, out);
  g_counting = false;
  g_commits = g_commits + 1;
}

// The lease of a granted reply line, or "".
std::string LeaseOf(const std::string& reply) {
  const char* key = "\"lease\":\"";
  size_t at = reply.find(key);
  if (at == std::string::npos) return "";
  at += std::strlen(key);
  return reply.substr(at, reply.find('"', at) - at);
}

int Run(int64_t iterations, int64_t subjects, bool slow) {
  Config config;
  ServerStats stats;
  Engine engine("l", config.lease_ttl_ms * 1000);
  Dispatcher d(&engine, &config, &stats);
  d.set_fast_path(!slow);
  const Peer peer{1000, false, 1};
  const Peer admin{0, true, 0};
  std::string out;
  int64_t now_us = kStartUs;
  d.Handle(admin,
           R"({"op":"policy.set","scope":"task:*","limits":[{"name":"rps",)"
           R"("resource":"requests","algorithm":"token_bucket",)"
           R"("rate":1000000000,"per_ms":1000,"burst":1000000000}]})",
           now_us, &out);
  if (out.find("\"ok\":true") == std::string::npos) {
    std::fprintf(stderr, "policy.set failed: %s", out.c_str());
    return 1;
  }
  // Lines are built before timing; the replies go to a reused buffer.
  std::vector<std::string> acquires;
  for (int64_t i = 0; i < subjects; ++i) {
    acquires.push_back(R"({"id":)" + std::to_string(i) +
                       R"(,"op":"acquire","user":"bench","task":"t)" +
                       std::to_string(i) + R"(","tokens":100})");
  }
  std::string commit;
  int64_t acquire_ns = 0, commit_ns = 0, acquire_news = 0, commit_news = 0;
  out.reserve(4096);
  for (int64_t i = 0; i < iterations; ++i) {
    out.clear();
    int64_t t0 = ThreadCpuNs();
    int64_t n0 = g_news;
    TimedAcquire(d, peer, acquires[i % subjects], now_us++, &out);
    acquire_news += g_news - n0;
    int64_t t1 = ThreadCpuNs();
    std::string lease = LeaseOf(out);
    if (lease.empty()) {
      std::fprintf(stderr, "acquire not granted: %s", out.c_str());
      return 1;
    }
    commit = R"({"id":)" + std::to_string(i) + R"(,"op":"commit","lease":")" +
             lease + R"(","tokens":90,"latency_ms":120,"outcome":"ok"})";
    out.clear();
    int64_t t2 = ThreadCpuNs();
    int64_t n2 = g_news;
    TimedCommit(d, peer, commit, now_us++, &out);
    commit_news += g_news - n2;
    int64_t t3 = ThreadCpuNs();
    if (out.find("\"charged_tokens\":90") == std::string::npos) {
      std::fprintf(stderr, "commit failed: %s", out.c_str());
      return 1;
    }
    acquire_ns += t1 - t0;
    commit_ns += t3 - t2;
    if (i % kBatch == kBatch - 1) {
      Batch batch;
      (void)engine.Drain(&batch, [](const Lease&, std::string*) {});
      (void)d.decider()->Drain(&batch);
      (void)engine.ExpireLeases(now_us);
    }
  }
  std::printf(
      "path %s, %lld iterations over %lld subjects: acquire %.0f ns, "
      "commit %.0f ns (thread CPU, including ~2 clock reads each); "
      "operator new per acquire %.2f, per commit %.2f; fast answers %llu\n",
      slow ? "general" : "fast", static_cast<long long>(iterations),
      static_cast<long long>(subjects),
      static_cast<double>(acquire_ns) / static_cast<double>(iterations),
      static_cast<double>(commit_ns) / static_cast<double>(iterations),
      static_cast<double>(acquire_news) / static_cast<double>(iterations),
      static_cast<double>(commit_news) / static_cast<double>(iterations),
      static_cast<unsigned long long>(d.fast_answers()));
  return 0;
}

}  // namespace
}  // namespace brake::bench

int main(int argc, char** argv) {
  int64_t iterations = 200'000;
  int64_t subjects = 16;
  bool slow = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--slow") {
      slow = true;
    } else if (a == "--iterations" && i + 1 < argc) {
      iterations = std::atoll(argv[++i]);
    } else if (a == "--subjects" && i + 1 < argc) {
      subjects = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: brake-handle-bench [--iterations N] "
                   "[--subjects N] [--slow]\n");
      return 2;
    }
  }
  if (iterations < 1 || subjects < 1) return 2;
  return brake::bench::Run(iterations, subjects, slow);
}

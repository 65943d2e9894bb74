// brake-decide-bench: the cost of one hierarchical Engine::Acquire decision,
// in process: no socket, no JSON, no storage thread. It is the ceiling the
// daemon's request path (parse, decide, reply, drain to storage) spends on
// top of, and the memory an idle subject holds in the engine.
//
// Every engine has token-bucket policies on `global`, `user:*` and `task:*`,
// so each acquire resolves three scopes and checks three limiters. Subject i
// is task "t<i>" of user "u<i % 1000>". After creating N subjects (one
// acquire each), a fixed number of decisions goes round-robin over them, in
// the order they were made (seq) or in one drawn at random (random):
//   grant  acquire granted, then cancelled (timed separately)
//   deny   acquire denied by the task's bucket (global and user admit first)
//   dry    acquire with dry_run: evaluated, granted, nothing charged
// Between batches of kBatch decisions the engine is drained as the daemon's
// flush timer would (the lease encoder writes nothing), and settled leases older
// than the lease TTL are forgotten; that "housekeeping" is timed too.
// The clock is simulated: now advances 1 us per decision. Each row runs in
// a forked child of its own, on a heap no earlier row has used.
//
// Memory per idle subject: in a forked child (a fresh heap), RSS
// (/proc/self/status VmRSS) before and after creating N subjects (acquire +
// commit, drained, settled leases forgotten), divided by N; once with only a
// `task:*` bucket, once with all three. Memory per open lease: the same for
// N grants of one task left open; per settled lease, for N grants of one
// task committed within the TTL (what the engine keeps to answer a
// duplicate commit).
//
// Exit codes: 0 ok, 1 error, 2 usage.
#include <malloc.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench/decide_engine.h"
#include "bench/decide_subjects.h"
#include "budget/engine.h"

namespace brake::bench {
namespace {

constexpr const char* kUsage = R"(usage: brake-decide-bench [flags]

  --iterations N      decisions per case and subject count (default 1000000)
  --subjects LIST     distinct subjects, comma-separated (default 1,1000,1000000)
  --cases LIST        grant,deny,dry or a subset (default all three)
  --memory-subjects N subjects (and open leases) for the memory figures;
                      0 skips them
                      (default 1000000)
  --prefetch WHEN     off, on or both: whether each decision is preceded by
                      Engine::Prefetch of the request kPrefetchAhead places
                      ahead, as the daemon does when the subjects outgrow
                      the caches (default both: a row each)
  --order LIST        seq,random or one of them: the subjects asked about
                      in the order they were made (and so in memory order),
                      or in an order drawn at random (default seq)
  --stored WHEN       off, on or both: whether every subject is also noted
                      as stored (in the engine's filter of stored scopes),
                      as in a daemon restarted over its database, so that
                      each acquire checks none must be loaded first
                      (default off)
  -h, --help          this text
)";

using Clock = std::chrono::steady_clock;

int64_t Ns(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// This thread's CPU time: unlike the wall clock, it does not count the time
// other processes on a shared machine hold the core.
int64_t CpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A batch's lease ids, in strings kept for their capacity (as the daemon
// writes an id into its reply): keeping them allocates nothing.
struct LeaseIds {
  std::vector<std::string> ids = std::vector<std::string>(kBatch);
  size_t n = 0;
  void Add(const std::string& id) { ids[n++].assign(id); }
};

// The timed loops. noinline, so that callgrind can collect exactly them
// (--toggle-collect='*TimedAcquires*' etc.).
[[gnu::noinline]] void TimedAcquires(Bench* b, AcquireRequest* req,
                                     int64_t first, int n, int64_t subjects,
                                     bool prefetch, const Shuffled* order,
                                     LeaseIds* leases, uint64_t* granted) {
  // One outcome for all, as the daemon keeps one.
  AcquireOutcome& out = b->outcome;
  SubjectCursor subject(req, first, subjects, order);
  // With prefetch, the request Engine::kPrefetchAhead places ahead is
  // announced before each decision, as a caller holding a batch would.
  AcquireRequest ahead = *req;
  SubjectCursor next(&ahead, first + Engine::kPrefetchAhead, subjects,
                     order, /*task_only=*/true);
  for (int k = 0; k < n; ++k, subject.Next()) {
    if (prefetch) {
      b->engine.Prefetch(next.task());
      next.Next();
    }
    Status s = b->engine.Acquire(*req, ++b->now_us, &out);
    if (!s.ok()) {  // a harness bug (say, a task named with another user)
      std::fprintf(stderr, "brake-decide-bench: acquire of %s/%s: %s\n",
                   req->user.c_str(), req->task.c_str(), s.ToString().c_str());
      std::exit(1);
    }
    if (out.granted) {
      ++*granted;
      if (!out.lease.empty()) leases->Add(out.lease);
    }
  }
}

[[gnu::noinline]] void TimedCancels(Bench* b,
                                    const LeaseIds& leases) {
  for (size_t i = 0; i < leases.n; ++i) {
    (void)b->engine.Cancel(leases.ids[i], b->now_us);
  }
}

struct CaseResult {
  uint64_t decisions = 0;
  uint64_t granted = 0;
  int64_t acquire_ns = 0;  // CPU time
  int64_t cancel_ns = 0;
  int64_t housekeeping_ns = 0;
  int64_t wall_ns = 0;  // acquires and cancels, steady_clock
};

CaseResult RunCase(const std::string& kind, int64_t subjects,
                   int64_t iterations, bool prefetch, bool stored,
                   const Shuffled* order) {
  const bool deny = kind == "deny";
  std::unique_ptr<Bench> b =
      MakeBench(subjects, /*hierarchy=*/true, /*stingy_tasks=*/deny,
                /*commit=*/deny);
  if (stored) {  // as braked's restore does, after the subjects exist
    AcquireRequest each;
    b->engine.ExpectStored(static_cast<size_t>(subjects) + kUsers + 1);
    b->engine.NoteStored("global");
    for (int64_t i = 0; i < subjects; ++i) {
      SetSubject(&each, i);
      if (i < kUsers) b->engine.NoteStored("user:" + each.user);
      b->engine.NoteStored("task:" + each.task);
    }
  }
  AcquireRequest req;
  req.dry_run = kind == "dry";
  LeaseIds leases;
  CaseResult out;
  for (int64_t done = 0; done < iterations;) {
    const int n =
        static_cast<int>(std::min<int64_t>(kBatch, iterations - done));
    leases.n = 0;
    const Clock::time_point wall0 = Clock::now();
    const int64_t t0 = CpuNs();
    TimedAcquires(b.get(), &req, done, n, subjects, prefetch, order, &leases,
                  &out.granted);
    const int64_t t1 = CpuNs();
    TimedCancels(b.get(), leases);
    const int64_t t2 = CpuNs();
    const Clock::time_point wall1 = Clock::now();
    b->Housekeep();
    const int64_t t3 = CpuNs();
    out.acquire_ns += t1 - t0;
    out.cancel_ns += t2 - t1;
    out.housekeeping_ns += t3 - t2;
    out.wall_ns += Ns(wall1 - wall0);
    done += n;
    out.decisions += static_cast<uint64_t>(n);
  }
  return out;
}

int64_t RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

// Runs `measure` in a forked child, a fresh heap (the parent's freed memory
// cannot hide growth), and returns what it returned; `failed` when it
// failed. T is copied as bytes.
template <class T>
T InChild(const std::function<T()>& measure, T failed) {
  static_assert(std::is_trivially_copyable_v<T>);
  int fds[2];
  if (pipe(fds) != 0) return failed;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const T got = measure();
    ssize_t w = write(fds[1], &got, sizeof got);
    _exit(w == sizeof got ? 0 : 1);
  }
  close(fds[1]);
  T got = failed;
  if (pid < 0 || read(fds[0], &got, sizeof got) != sizeof got) got = failed;
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return got;
}

double InChild(const std::function<double()>& measure) {
  return InChild<double>(measure, -1);
}

// Bytes of RSS per idle subject.
double IdleBytesPerSubject(int64_t subjects, bool hierarchy) {
  return InChild([&] {
    malloc_trim(0);
    const int64_t before = RssKb();
    std::unique_ptr<Bench> b =
        MakeBench(subjects, hierarchy, /*stingy_tasks=*/false, /*commit=*/true,
                  kShortLeaseTtlUs);
    malloc_trim(0);  // hand back what was freed on the way (settled leases)
    return static_cast<double>(RssKb() - before) * 1024.0 /
           static_cast<double>(subjects);
  });
}

// Bytes of RSS per lease: one task granted `leases` times, drained as the
// flush timer would (the batches freed). Left open (`settle` false): the
// engine's share only; the daemon also keeps each lease's stored row
// (SQLite's cache) and the drain's copies until they are stored. Committed
// within the TTL (`settle` true): what the engine keeps of a settled lease
// to answer a duplicate commit, for a TTL after its settlement.
double LeaseBytes(int64_t leases, bool settle) {
  return InChild([&]() -> double {
    // A TTL past the run: every settlement is kept.
    std::unique_ptr<Bench> b = MakeBench(1, /*hierarchy=*/true,
                                         /*stingy_tasks=*/false,
                                         /*commit=*/true,
                                         /*lease_ttl_us=*/4 * leases + 1000);
    b->engine.set_max_open_leases(leases);
    AcquireRequest req;
    SetSubject(&req, 0);
    CommitRequest done;
    malloc_trim(0);
    const int64_t before = RssKb();
    for (int64_t i = 0; i < leases; ++i) {
      if (!b->engine.Acquire(req, ++b->now_us, &b->outcome).ok() ||
          !b->outcome.granted) {
        return -1;
      }
      done.lease = b->outcome.lease;
      if (settle && !b->engine.Commit(done, ++b->now_us).ok()) return -1;
      if (i % kBatch == kBatch - 1) {
        b->batch = Batch{};
        (void)b->engine.Drain(&b->batch, [](const Lease&, std::string*) {});
      }
    }
    b->batch = Batch{};
    malloc_trim(0);
    return static_cast<double>(RssKb() - before) * 1024.0 /
           static_cast<double>(leases);
  });
}

bool ParseList(std::string_view s, std::vector<std::string>* out) {
  out->clear();
  while (!s.empty()) {
    size_t comma = s.find(',');
    out->emplace_back(s.substr(0, comma));
    if (out->back().empty()) return false;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return !out->empty();
}

bool ParseCount(std::string_view s, int64_t lo, int64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= lo;
}

int Usage(const std::string& problem) {
  std::fprintf(stderr, "brake-decide-bench: %s\n%s", problem.c_str(), kUsage);
  return 2;
}

// "off", "on" or "both": the settings to run (both: a row each).
bool ParseWhen(const std::string& value, std::vector<bool>* out) {
  if (value == "off" || value == "on") {
    *out = {value == "on"};
  } else if (value == "both") {
    *out = {false, true};
  } else {
    return false;
  }
  return true;
}

void PrintRow(int64_t subjects, const std::string& kind, bool prefetch,
              bool stored, const std::string& order, const CaseResult& r) {
  const double d = static_cast<double>(r.decisions);
  const double acquire = static_cast<double>(r.acquire_ns) / d;
  const double cancel = static_cast<double>(r.cancel_ns) / d;
  const double per = acquire + cancel;
  std::printf(
      "%9lld  %-5s  %3s  %3s  %11.0f  %7.0f  %10.0f  %9.0f  %10.0f  %11.0f  "
      "%9llu  %s\n",
      static_cast<long long>(subjects), kind.c_str(), prefetch ? "on" : "off",
      stored ? "on" : "off", 1e9 / per, per, acquire, cancel,
      static_cast<double>(r.housekeeping_ns) / d,
      static_cast<double>(r.wall_ns) / d,
      static_cast<unsigned long long>(r.granted), order.c_str());
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  int64_t iterations = 1'000'000;
  int64_t memory_subjects = 1'000'000;
  std::vector<int64_t> subject_counts{1, 1000, 1'000'000};
  std::vector<std::string> cases{"grant", "deny", "dry"};
  std::vector<bool> prefetches{false, true};
  std::vector<bool> storeds{false};
  std::vector<std::string> orders{"seq"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) return Usage(arg + ": missing value or unknown flag");
    const std::string value = argv[++i];
    std::vector<std::string> items;
    if (arg == "--iterations") {
      if (!ParseCount(value, 1, &iterations))
        return Usage(arg + " needs N >= 1");
    } else if (arg == "--memory-subjects") {
      if (!ParseCount(value, 0, &memory_subjects)) {
        return Usage(arg + " needs N >= 0");
      }
    } else if (arg == "--subjects") {
      subject_counts.clear();
      if (!ParseList(value, &items)) return Usage(arg + " needs a list");
      for (const std::string& item : items) {
        int64_t n = 0;
        if (!ParseCount(item, 1, &n)) return Usage(arg + ": bad count " + item);
        subject_counts.push_back(n);
      }
    } else if (arg == "--prefetch" || arg == "--stored") {
      if (!ParseWhen(value, arg == "--stored" ? &storeds : &prefetches)) {
        return Usage(arg + " needs off, on or both");
      }
    } else if (arg == "--order") {
      if (!ParseList(value, &orders)) return Usage(arg + " needs a list");
      for (const std::string& o : orders) {
        if (o != "seq" && o != "random") {
          return Usage(arg + ": unknown order " + o);
        }
      }
    } else if (arg == "--cases") {
      if (!ParseList(value, &cases)) return Usage(arg + " needs a list");
      for (const std::string& c : cases) {
        if (c != "grant" && c != "deny" && c != "dry") {
          return Usage(arg + ": unknown case " + c);
        }
      }
    } else {
      return Usage("unknown flag " + arg);
    }
  }

  // First, while this process's heap is still small: a forked child
  // reuses (and so does not count) memory its parent has freed.
  if (memory_subjects > 0) {
    std::printf(
        "memory per idle subject (%lld subjects, each acquired and "
        "committed once, drained, settled leases forgotten):\n",
        static_cast<long long>(memory_subjects));
    std::printf("  task:* bucket only:            %8.0f bytes\n",
                IdleBytesPerSubject(memory_subjects, false));
    std::printf("  global + user:* + task:*:      %8.0f bytes\n",
                IdleBytesPerSubject(memory_subjects, true));
    std::printf("memory per open lease (%lld leases of one task, drained, "
                "not settled): %.0f bytes\n",
                static_cast<long long>(memory_subjects),
                LeaseBytes(memory_subjects, /*settle=*/false));
    std::printf("memory per settled lease kept for duplicate answers (%lld "
                "leases of one task, committed within the TTL, drained): "
                "%.0f bytes\n\n",
                static_cast<long long>(memory_subjects),
                LeaseBytes(memory_subjects, /*settle=*/true));
  }
  std::printf(
      "brake-decide-bench: %lld decisions per row; policies global + user:* "
      "+ task:* token buckets (3 scopes, 3 limiters per acquire)\n"
      "ns are this thread's CPU time per decision (a grant's decision is its "
      "acquire + cancel);\nwall ns/dec is the same by steady_clock; "
      "housekeeping (drain + forget) is not counted in a decision\n\n",
      static_cast<long long>(iterations));
  std::printf(
      "%9s  %-5s  %3s  %3s  %11s  %7s  %10s  %9s  %10s  %11s  %9s  %s\n",
      "subjects", "case", "pf", "st", "decisions/s", "ns/dec", "ns/acquire",
      "ns/cancel", "ns/housek.", "wall ns/dec", "granted", "order");
  for (int64_t subjects : subject_counts) {
    for (const std::string& order : orders) {
      std::unique_ptr<Shuffled> shuffled;
      if (order == "random") shuffled = std::make_unique<Shuffled>(subjects);
      for (const std::string& kind : cases) {
        for (bool prefetch : prefetches) {
          for (bool stored : storeds) {
            // Each row in a child of its own: an engine made where an
            // earlier row's was freed takes its blocks from the free lists
            // in the order that one freed them (its table's, at random),
            // and subjects in creation order would then no longer be in
            // memory order.
            const CaseResult r = InChild<CaseResult>(
                [&] {
                  return RunCase(kind, subjects, iterations, prefetch, stored,
                                 shuffled.get());
                },
                CaseResult{});
            if (r.decisions == 0) {
              std::fprintf(stderr, "brake-decide-bench: a row's child "
                                   "failed\n");
              return 1;
            }
            PrintRow(subjects, kind, prefetch, stored, order, r);
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace brake::bench

int main(int argc, char** argv) { return brake::bench::Main(argc, argv); }

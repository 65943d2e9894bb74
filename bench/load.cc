#include "bench/load.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/load_worker.h"
#include "bench/unix_socket.h"

namespace brake::bench {
namespace {

using load_worker::Conn;
using load_worker::JsonString;
using load_worker::NowNs;
using load_worker::RealNowUs;
using load_worker::SecondsToNs;
using load_worker::Shared;
using load_worker::Worker;

std::string RequestTail(const LoadConfig& config, int conn_index) {
  if (config.op == BenchOp::kPing) return ",\"op\":\"ping\"}\n";
  const int tasks = config.tasks > 0 ? config.tasks : config.connections;
  const std::string task =
      config.task_prefix + std::to_string(conn_index % tasks);
  const std::string user =
      config.users > 1
          ? config.user + "-" + std::to_string(conn_index % config.users)
          : config.user;
  std::string tail = ",\"op\":\"acquire\",\"user\":" + JsonString(user) +
                     ",\"task\":" + JsonString(task) +
                     ",\"tokens\":" + std::to_string(config.tokens);
  if (config.wait_ms > 0) {
    tail += ",\"wait_ms\":" + std::to_string(config.wait_ms);
  }
  return tail + "}\n";
}

}  // namespace

Result<LoadResult> RunLoad(const LoadConfig& config) {
  if (config.connections < 1 || config.depth < 1 || config.seconds <= 0 ||
      config.warmup_seconds < 0 || config.wait_ms < 0) {
    return Status::BadRequest(
        "connections and depth must be >= 1, seconds > 0, warm-up and "
        "wait_ms >= 0");
  }
  std::vector<std::unique_ptr<Conn>> conns;
  auto close_all = [&conns] {
    for (auto& c : conns) {
      if (c->fd >= 0) close(c->fd);
      c->fd = -1;
    }
  };
  // "A,B,C": connection i connects to the (i mod 3)-th socket (daemons of
  // one cluster).
  std::vector<std::string> sockets;
  for (size_t start = 0;;) {
    const size_t comma = config.socket_path.find(',', start);
    sockets.push_back(config.socket_path.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (int i = 0; i < config.connections; ++i) {
    Result<int> fd = ConnectUnix(sockets[i % sockets.size()]);
    if (!fd.ok()) {
      close_all();
      return Status(fd.status().code(),
                    fd.status().message() + " (connection " +
                        std::to_string(i) + " of " +
                        std::to_string(config.connections) + ")");
    }
    auto c = std::make_unique<Conn>();
    c->fd = *fd;
    c->index = i;
    c->request_tail = RequestTail(config, i);
    if (config.spread) {
      // The tail with the task's number cut out: `..."task":"<prefix>` and
      // `","tokens":...`.
      LoadConfig marked = config;
      marked.task_prefix += "#";
      marked.tasks = 1;
      const std::string whole = RequestTail(marked, i);
      const size_t hash = whole.rfind("#0\"");  // prefix#, task i % 1
      c->spread_head = whole.substr(0, hash);
      c->spread_tail = whole.substr(hash + 2);
      c->next_task = i % (config.tasks > 0 ? config.tasks : config.connections);
    }
    c->slots.resize(static_cast<size_t>(config.depth));
    for (int s = config.depth - 1; s >= 0; --s) {
      c->free_slots.push_back(static_cast<uint32_t>(s));
    }
    conns.push_back(std::move(c));
  }

  const int threads = std::clamp(config.threads, 1, config.connections);
  std::vector<std::vector<Conn*>> assignment(static_cast<size_t>(threads));
  for (size_t i = 0; i < conns.size(); ++i) {
    assignment[i % assignment.size()].push_back(conns[i].get());
  }
  const size_t ms_buckets =
      static_cast<size_t>(std::ceil(config.seconds * 1000.0));

  Shared shared;
  shared.start_ns = NowNs();
  shared.window_us = std::max<int64_t>(1, config.window_ms) * 1000;
  shared.first_window = RealNowUs() / shared.window_us;
  {
    // The whole run plus slack for a wall clock stepped forward.
    const int64_t run_us = SecondsToNs(config.warmup_seconds + config.seconds +
                                       DrainSeconds(config)) /
                               1000 +
                           1000000;
    shared.aligned_windows = static_cast<size_t>(run_us / shared.window_us + 2);
  }
  shared.measure_start_ns =
      shared.start_ns + SecondsToNs(config.warmup_seconds);
  shared.measure_end_ns = shared.measure_start_ns + SecondsToNs(config.seconds);
  shared.drain_end_ns =
      shared.measure_end_ns + SecondsToNs(DrainSeconds(config));

  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> running;
  for (auto& list : assignment) {
    workers.push_back(
        std::make_unique<Worker>(config, &shared, list, ms_buckets));
  }
  for (auto& w : workers) {
    Worker* raw = w.get();
    try {
      running.emplace_back([raw, &shared] {
        try {
          raw->Run();
        } catch (const std::exception& e) {
          shared.Fail(std::string("load thread: ") + e.what());
        } catch (...) {
          shared.Fail("load thread: unknown exception");
        }
      });
    } catch (const std::exception& e) {
      shared.Fail(std::string("cannot start a load thread: ") + e.what());
      break;
    }
  }
  for (auto& t : running) t.join();
  close_all();
  if (shared.failed.load()) return Status::Unavailable(shared.failure);

  LoadResult total;
  total.threads = threads;
  total.measured_seconds = config.seconds;
  total.grants_per_ms.assign(ms_buckets, 0);
  total.grant_sends_per_ms.assign(ms_buckets, 0);
  total.aligned_first_window = shared.first_window;
  total.aligned_received.assign(shared.aligned_windows, 0);
  total.aligned_certain.assign(shared.aligned_windows, 0);
  for (auto& w : workers) {
    LoadResult& r = w->result();
    total.decisions += r.decisions;
    total.latency.Merge(r.latency);
    total.grants += r.grants;
    total.denials += r.denials;
    total.errors += r.errors;
    total.ok_other += r.ok_other;
    total.echoed += r.echoed;
    total.unmatched += r.unmatched;
    total.commits_ok += r.commits_ok;
    total.commit_errors += r.commit_errors;
    total.commit_latency.Merge(r.commit_latency);
    total.undrained += r.undrained;
    total.answers += r.answers;
    total.max_answer_us = std::max(total.max_answer_us, r.max_answer_us);
    total.max_grant_answer_us =
        std::max(total.max_grant_answer_us, r.max_grant_answer_us);
    total.max_denial_answer_us =
        std::max(total.max_denial_answer_us, r.max_denial_answer_us);
    total.late_answers += r.late_answers;
    total.grant_times_recorded = r.grant_times_recorded;
    total.grant_times_us.insert(total.grant_times_us.end(),
                                r.grant_times_us.begin(),
                                r.grant_times_us.end());
    for (size_t i = 0; i < ms_buckets; ++i) {
      total.grants_per_ms[i] += r.grants_per_ms[i];
      total.grant_sends_per_ms[i] += r.grant_sends_per_ms[i];
    }
    total.grants_sent_before += r.grants_sent_before;
    for (size_t i = 0; i < shared.aligned_windows; ++i) {
      total.aligned_received[i] += r.aligned_received[i];
      total.aligned_certain[i] += r.aligned_certain[i];
    }
    w->denials().MergeInto(&total.denials_by_reason);
    w->errors().MergeInto(&total.errors_by_code);
    w->commit_errors().MergeInto(&total.commit_errors_by_code);
  }
  std::sort(total.grant_times_us.begin(), total.grant_times_us.end());
  for (auto& c : conns) total.grants_per_connection.push_back(c->grants);
  return total;
}

}  // namespace brake::bench

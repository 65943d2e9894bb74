// Waiting acquires against the real daemon: grants spaced by a
// token bucket, timeouts answered at once when the grant lies beyond
// wait_ms, waiters dropped with their connection, woken by a release,
// bounded per scope, served fairly across a user's tasks, never blocking
// the rest of their connection, and answered on SIGTERM.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

json AcquireLine(const json& id, const std::string& user,
                 const std::string& task, int64_t wait_ms) {
  return {{"id", id},
          {"op", "acquire"},
          {"user", user},
          {"task", task},
          {"wait_ms", wait_ms}};
}

// Sends `request` and a ping behind it, and reads the ping's answer: the
// request has then been read and (for a waiting acquire) parked. Any answer
// that comes before the ping's is returned in `early`.
void SendThenPing(Client& c, const json& request,
                  std::vector<json>* early = nullptr) {
  c.SendRaw(request.dump() + "\n" +
            json({{"op", "ping"}, {"id", "sync"}}).dump() + "\n");
  while (true) {
    json reply = json::parse(c.ReadLine().value());
    if (reply["id"] == "sync") return;
    INFO("answered before the ping: " << reply.dump());
    REQUIRE(early != nullptr);
    early->push_back(reply);
  }
}

const char* kGranted = "brake_acquires_total{result=\"granted\"}";

TEST_CASE(
    "token bucket 1/s: waiters of two tasks are granted about a second "
    "apart, and one that cannot make it is refused at once",
    "[integration][waiting]") {
  RunningDaemon d;
  Client admin = d.daemon.Connect();
  SetPolicy(admin, "user:w", R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":1,"per_ms":1000,"burst":1}])");
  Client a = d.daemon.Connect();
  Client b = d.daemon.Connect();
  Client late = d.daemon.Connect();

  const int64_t start = MonoMs();
  // Each one read (and parked, or granted) before the next is sent.
  std::vector<json> early;
  SendThenPing(a, AcquireLine("a1", "w", "A", 2500), &early);
  SendThenPing(b, AcquireLine("b1", "w", "B", 2500), &early);
  SendThenPing(a, AcquireLine("a2", "w", "A", 2500), &early);

  const int64_t late_sent = MonoMs();
  json refused = late.Call(AcquireLine("late", "w", "A", 500));
  const int64_t late_ms = MonoMs() - late_sent;
  INFO("refused: " << refused.dump());
  CHECK(refused["ok"] == true);
  CHECK(refused["granted"] == false);
  CHECK(refused["reason"] == "timeout");
  CHECK(refused["scope"] == "user:w");
  REQUIRE(refused["retry_after_ms"].is_number_integer());
  CHECK(refused["retry_after_ms"].get<int64_t>() > 500);
  CHECK(late_ms < 400);  // at once, not after its 500 ms

  std::map<std::string, int64_t> waited;  // id -> waited_ms
  auto record = [&](const json& r) {
    INFO("grant: " << r.dump());
    REQUIRE(r["ok"] == true);
    REQUIRE(r["granted"] == true);
    waited[r["id"].get<std::string>()] = r["waited_ms"].get<int64_t>();
  };
  // The bucket starts full: the first is granted at once.
  REQUIRE(early.size() == 1);
  CHECK(early[0]["id"] == "a1");
  record(early[0]);
  record(ReadJson(b, 4000));
  record(ReadJson(a, 4000));
  CHECK(MonoMs() - start < 2600);
  REQUIRE(waited.size() == 3);
  std::vector<int64_t> w;
  for (const auto& [id, ms] : waited) w.push_back(ms);
  std::sort(w.begin(), w.end());
  INFO("waited_ms a1 " << waited["a1"] << " b1 " << waited["b1"] << " a2 "
                       << waited["a2"]);
  CHECK(w[0] < 100);  // the bucket starts full
  CHECK(w[1] >= 900);
  CHECK(w[1] <= 1300);
  CHECK(w[2] >= 1900);
  CHECK(w[2] <= 2300);
  // Round-robin across the tasks: B's only waiter is served before A's
  // second.
  CHECK(waited["b1"] < waited["a2"]);
}

TEST_CASE("a waiter whose connection closes is dropped",
          "[integration][waiting]") {
  RunningDaemon d;
  Client admin = d.daemon.Connect();
  SetPolicy(admin, "user:x", R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":1,"per_ms":1000,"burst":1}])");
  const int64_t drained_at = MonoMs();
  AcquireLease(admin, "x", "t1");  // the bucket is empty now
  {
    Client gone = d.daemon.Connect();
    SendThenPing(gone, AcquireLine("gone", "x", "t1", 3000));
  }  // closed while parked
  REQUIRE(
      PollUntil([&] { return Metric(admin, "brake_connections") == 1; }, 2000));
  Client stays = d.daemon.Connect();
  SendThenPing(stays, AcquireLine("stays", "x", "t2", 3000));
  json r = ReadJson(stays, 4000);
  const int64_t since_drain = MonoMs() - drained_at;
  INFO("reply: " << r.dump());
  REQUIRE(r["id"] == "stays");
  REQUIRE(r["granted"] == true);
  // The first token after the drain went to it, not to the closed waiter
  // (which would have taken it and pushed this grant to ~2 s).
  CHECK(since_drain < 1500);
  CHECK(r["waited_ms"].get<int64_t>() < 1200);
  // Open leases: the drain and this grant; none went to the closed waiter.
  CHECK(Metric(admin, "brake_leases_open") == 2);
}

TEST_CASE(
    "concurrency 1: a waiter is granted as soon as the holder commits, and "
    "times out when nobody releases",
    "[integration][waiting]") {
  RunningDaemon d;
  Client holder = d.daemon.Connect();
  SetPolicy(holder, "user:cc", R"([{"name":"one","resource":"requests",
      "algorithm":"concurrency","limit":1}])");
  std::string lease = AcquireLease(holder, "cc", "t1");
  Client waiter = d.daemon.Connect();
  SendThenPing(waiter, AcquireLine("w", "cc", "t2", 3000));
  SleepMs(300);
  CallOk(holder, {{"op", "commit"}, {"lease", lease}, {"tokens", 1}});
  const int64_t committed_at = MonoMs();
  json granted = ReadJson(waiter, 3000);
  const int64_t after_commit = MonoMs() - committed_at;
  INFO("reply: " << granted.dump());
  REQUIRE(granted["id"] == "w");
  REQUIRE(granted["granted"] == true);
  CHECK(granted["waited_ms"].get<int64_t>() >= 290);
  CHECK(granted["waited_ms"].get<int64_t>() <= 500);
  CHECK(after_commit < 100);

  // Now the waiter holds the slot and nobody releases it.
  const int64_t sent = MonoMs();
  json timed_out = holder.Call(AcquireLine("t", "cc", "t1", 800));
  const int64_t elapsed = MonoMs() - sent;
  INFO("reply: " << timed_out.dump());
  CHECK(timed_out["ok"] == true);
  CHECK(timed_out["granted"] == false);
  CHECK(timed_out["reason"] == "timeout");
  CHECK(timed_out["scope"] == "user:cc");
  CHECK(elapsed >= 780);
  CHECK(elapsed < 1300);
}

TEST_CASE(
    "waiters bound by one scope beyond max_waiters_per_scope are "
    "refused at once with queue_full",
    "[integration][waiting]") {
  RunningDaemon d(json{{"max_waiters_per_scope", 3}});
  Client admin = d.daemon.Connect();

  SECTION("one user's scope") {
    SetPolicy(admin, "user:q", R"([{"name":"one","resource":"requests",
        "algorithm":"concurrency","limit":1}])");
    std::string lease = AcquireLease(admin, "q", "t0");
    Client w = d.daemon.Connect();
    for (int i = 0; i < 3; ++i) {
      SendThenPing(w, AcquireLine(i, "q", "t" + std::to_string(i), 3000));
    }
    const int64_t sent = MonoMs();
    json full = admin.Call(AcquireLine("full", "q", "t9", 3000));
    const int64_t elapsed = MonoMs() - sent;
    INFO("reply: " << full.dump());
    CHECK(full["granted"] == false);
    CHECK(full["reason"] == "queue_full");
    CHECK(full["scope"] == "user:q");
    CHECK(elapsed < 1000);  // at once, not after its 3 s
    // A release serves the first waiter; the queue has room again.
    CallOk(admin, {{"op", "commit"}, {"lease", lease}, {"tokens", 1}});
    json first = ReadJson(w);
    CHECK(first["id"] == 0);
    CHECK(first["granted"] == true);
    SendThenPing(w, AcquireLine("again", "q", "t3", 3000));
  }
  SECTION("the global scope, waiters of different users") {
    SetPolicy(admin, "global", R"([{"name":"one","resource":"requests",
        "algorithm":"concurrency","limit":1}])");
    AcquireLease(admin, "h", "th");
    Client w = d.daemon.Connect();
    for (int i = 0; i < 3; ++i) {
      std::string n = std::to_string(i);
      SendThenPing(w, AcquireLine(i, "u" + n, "t" + n, 3000));
    }
    const int64_t sent = MonoMs();
    json full = admin.Call(AcquireLine("full", "u9", "t9", 3000));
    const int64_t elapsed = MonoMs() - sent;
    INFO("reply: " << full.dump());
    CHECK(full["granted"] == false);
    CHECK(full["reason"] == "queue_full");
    CHECK(full["scope"] == "global");
    CHECK(elapsed < 1000);  // at once, not after its 3 s
  }
}

TEST_CASE(
    "fairness: a task with one waiter is served among the first two grants "
    "though another task of its user queued 20 before it",
    "[integration][waiting]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:f", R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":20,"per_ms":1000,"burst":1}])");
  AcquireLease(c, "f", "A");  // the bucket is empty now
  std::string lines;
  for (int i = 0; i < 20; ++i) {
    lines += AcquireLine("a" + std::to_string(i), "f", "A", 5000).dump() + "\n";
  }
  lines += AcquireLine("b", "f", "B", 5000).dump() + "\n";
  c.SendRaw(lines);  // in one write: A's twenty are queued first
  // Grants are answered in the order they are made.
  std::vector<std::string> order;
  for (int i = 0; i < 21; ++i) {
    json r = ReadJson(c, 5000);
    INFO("reply " << i << ": " << r.dump());
    REQUIRE(r["granted"] == true);
    order.push_back(r["id"].get<std::string>());
  }
  const auto b = std::find(order.begin(), order.end(), "b");
  REQUIRE(b != order.end());
  INFO("B granted as number " << (b - order.begin()) + 1);
  CHECK(b - order.begin() <= 1);
  // Within a task: FIFO.
  std::vector<std::string> a_order;
  for (const std::string& id : order) {
    if (id != "b") a_order.push_back(id);
  }
  for (int i = 0; i < 20; ++i) CHECK(a_order[i] == "a" + std::to_string(i));
}

TEST_CASE("a waiting acquire does not block other requests on its connection",
          "[integration][waiting]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:p", R"([{"name":"rps","resource":"requests",
      "algorithm":"token_bucket","rate":1,"per_ms":1000,"burst":1}])");
  AcquireLease(c, "p", "t1");
  const int64_t start = MonoMs();
  c.SendRaw(AcquireLine("slow", "p", "t1", 2000).dump() + "\n" +
            json({{"id", "ping"}, {"op", "ping"}}).dump() + "\n" +
            json({{"id", "status"}, {"op", "status"}, {"user", "p"}}).dump() +
            "\n" + AcquireLine("other", "q", "t9", 0).dump() + "\n");
  json ping = ReadJson(c);
  const int64_t ping_ms = MonoMs() - start;
  json status = ReadJson(c);
  json other = ReadJson(c);
  const int64_t others_ms = MonoMs() - start;
  json slow = ReadJson(c, 3000);
  const int64_t slow_ms = MonoMs() - start;
  CHECK(ping["id"] == "ping");
  CHECK(ping["ok"] == true);
  CHECK(status["id"] == "status");
  CHECK(status["ok"] == true);
  CHECK(other["id"] == "other");
  CHECK(other["granted"] == true);
  CHECK(ping_ms < 500);  // before the waiter's second, not after it
  CHECK(others_ms < 500);
  INFO("slow: " << slow.dump());
  CHECK(slow["id"] == "slow");
  CHECK(slow["granted"] == true);
  CHECK(slow_ms >= 800);
}

// braked counts only acquires answered on the spot (wait_ms 0) in
// brake_acquires_total: daemon/ops.cc increments acquires_granted_ and
// acquires_denied_ only on that path, and Waiters never does, so a granted
// waiter, a timeout and a queue_full are all missing from the metric (the
// reason="timeout" and reason="queue_full" series, which only waiters can
// produce, stay 0 for ever).
TEST_CASE("waiting acquires are counted in brake_acquires_total",
          "[integration][waiting]") {
  RunningDaemon d(json{{"max_waiters_per_scope", 1}});
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:m", R"([{"name":"one","resource":"requests",
      "algorithm":"concurrency","limit":1}])");
  std::string lease = AcquireLease(c, "m", "t1");  // granted: 1
  Client w = d.daemon.Connect();
  SendThenPing(w, AcquireLine("w", "m", "t1", 3000));
  json full = c.Call(AcquireLine("full", "m", "t2", 3000));
  REQUIRE(full["reason"] == "queue_full");
  CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 1}});
  REQUIRE(ReadJson(w)["granted"] == true);  // granted: 2
  json timed_out = c.Call(AcquireLine("t", "m", "t1", 100));
  REQUIRE(timed_out["reason"] == "timeout");
  CHECK(Metric(c, kGranted) == 2);
  CHECK(
      Metric(c,
             "brake_acquires_total{result=\"denied\",reason=\"queue_full\"}") ==
      1);
  CHECK(
      Metric(c, "brake_acquires_total{result=\"denied\",reason=\"timeout\"}") ==
      1);
  // Every waiting acquire's answer is in the wait histogram too, and the
  // queue_full came from max_waiters_per_scope.
  CHECK(Metric(c, "brake_wait_seconds_count{result=\"granted\"}") == 1);
  CHECK(Metric(c, "brake_wait_seconds_count{result=\"queue_full\"}") == 1);
  CHECK(Metric(c, "brake_wait_seconds_count{result=\"timeout\"}") == 1);
  CHECK(Metric(c, "brake_limit_hits_total{limit=\"max_waiters_per_scope\"}") ==
        1);
}

TEST_CASE("a waiter is woken by a cancel and by a lease expiring",
          "[integration][waiting]") {
  RunningDaemon d(json{{"lease_ttl_ms", 1000}});
  Client holder = d.daemon.Connect();
  SetPolicy(holder, "user:cc", R"([{"name":"one","resource":"requests",
      "algorithm":"concurrency","limit":1}])");
  std::string lease = AcquireLease(holder, "cc", "t1");
  Client waiter = d.daemon.Connect();
  SendThenPing(waiter, AcquireLine("after-cancel", "cc", "t2", 3000));
  CallOk(holder, {{"op", "cancel"}, {"lease", lease}});
  const int64_t cancelled_at = MonoMs();
  json granted = ReadJson(waiter, 3000);
  INFO("reply: " << granted.dump());
  REQUIRE(granted["granted"] == true);
  CHECK(MonoMs() - cancelled_at < 1000);  // woken, not timed out at 3 s
  // Nobody settles that lease: it expires after lease_ttl_ms and frees the
  // slot for the next waiter.
  const int64_t granted_at = MonoMs();
  json expired = holder.Call(AcquireLine("after-expiry", "cc", "t1", 3000));
  const int64_t elapsed = MonoMs() - granted_at;
  INFO("reply: " << expired.dump());
  CHECK(expired["granted"] == true);
  CHECK(elapsed >= 900);
  CHECK(elapsed < 1600);
}

TEST_CASE("a waiter against a spent total usd cap is answered at once",
          "[integration][waiting]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPrice(c, "m", 1, 1);
  SetPolicy(c, "user:u", R"([{"name":"cap","resource":"usd",
      "algorithm":"quota","limit":0.001,"period":"total"}])");
  CallOk(c, {{"op", "commit"},
             {"lease", AcquireLease(c, "u", "t", {{"model", "m"}, {"tokens", 1000}})},
             {"tokens", 1000}});  // spent, not held
  json request = AcquireLine("w", "u", "t", 2000);
  request["model"] = "m";
  request["tokens"] = 1;
  const int64_t sent = MonoMs();
  json denied = c.Call(request);
  INFO("reply: " << denied.dump());
  CHECK(MonoMs() - sent < 1000);  // at once, not after its 2 s
  CHECK(denied["granted"] == false);
  CHECK(denied["reason"] == "cost_cap");
  CHECK(denied["scope"] == "user:u");
  CHECK(denied["retry_after_ms"].is_null());
}

TEST_CASE("a waiter's grant survives kill -9 right after it arrives",
          "[integration][waiting]") {
  RunningDaemon d(json{{"durability", "strict"}});
  std::string lease;
  {
    Client holder = d.daemon.Connect();
    SetPolicy(holder, "user:k", R"([{"name":"one","resource":"requests",
        "algorithm":"concurrency","limit":1}])");
    std::string first = AcquireLease(holder, "k", "t1");
    Client waiter = d.daemon.Connect();
    SendThenPing(waiter, AcquireLine("w", "k", "t2", 3000));
    CallOk(holder, {{"op", "commit"}, {"lease", first}, {"tokens", 1}});
    json granted = ReadJson(waiter, 3000);
    d.daemon.Kill9();  // the moment the grant arrived
    INFO("reply: " << granted.dump());
    REQUIRE(granted["granted"] == true);
    lease = granted["lease"].get<std::string>();
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json status = CallOk(c, {{"op", "status"}, {"user", "k"}});
  CHECK(status["reserved"]["requests"] == 1);
  CHECK(status["spend"]["requests"] == 1);
  // The slot is still held by the restored lease.
  CHECK(Acquire(c, "k", "t1")["reason"] == "concurrency");
  json commit = CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 9}});
  CHECK(commit["charged_tokens"] == 9);
  AcquireLease(c, "k", "t1");
}

TEST_CASE("SIGTERM answers parked waiters unavailable and exits 0",
          "[integration][waiting]") {
  RunningDaemon d;
  Client c = d.daemon.Connect();
  SetPolicy(c, "user:s", R"([{"name":"one","resource":"requests",
      "algorithm":"concurrency","limit":1}])");
  AcquireLease(c, "s", "t1");
  Client w1 = d.daemon.Connect();
  Client w2 = d.daemon.Connect();
  SendThenPing(w1, AcquireLine("w1", "s", "t1", 10000));
  SendThenPing(w2, AcquireLine("w2", "s", "t2", 10000));
  SendThenPing(w2, AcquireLine("w3", "s", "t2", 10000));
  const int64_t start = MonoMs();
  CHECK(d.daemon.Stop(SIGTERM) == 0);
  CHECK(MonoMs() - start < 3000);  // not after the waits
  std::vector<json> replies = {ReadJson(w1), ReadJson(w2), ReadJson(w2)};
  std::vector<std::string> ids;
  for (const json& r : replies) {
    INFO("reply: " << r.dump());
    CHECK(r["ok"] == false);
    CHECK(ErrorCodeOf(r) == "unavailable");
    ids.push_back(r["id"].get<std::string>());
  }
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::string>{"w1", "w2", "w3"});
  CHECK(w1.WaitForEof(2000));
  CHECK(w2.WaitForEof(2000));
}

}  // namespace
}  // namespace brake::integration

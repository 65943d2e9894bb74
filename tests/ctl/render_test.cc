// Human output for canned daemon replies.
#include "ctl/render.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace brake::ctl {
namespace {

using nlohmann::json;

using RenderFn = void (*)(const json&, const json&, std::ostream&);

std::string Render(RenderFn render, const char* reply,
                   const char* request = "{}") {
  std::ostringstream out;
  render(json::parse(request), json::parse(reply), out);
  return out.str();
}

TEST_CASE("ping shows the daemon version", "[ctl]") {
  CHECK(Render(RenderPing, R"({"ok":true,"version":"0.1.0"})") ==
        "PONG (braked 0.1.0)\n");
}

TEST_CASE("plain acknowledgements say OK, or what did not happen", "[ctl]") {
  CHECK(Render(RenderOk, R"({"ok":true})") == "OK\n");
  CHECK(Render(RenderOk, R"({"ok":true,"duplicate":true})") ==
        "OK (already settled)\n");
  CHECK(Render(RenderDeleted, R"({"ok":true,"deleted":true})",
               R"({"scope":"user:a"})") == "OK\n");
  CHECK(Render(RenderDeleted, R"({"ok":true,"deleted":false})",
               R"({"scope":"user:a"})") == "no policy for user:a\n");
}

TEST_CASE("a granted acquire prints the lease line first", "[ctl]") {
  CHECK(
      Render(
          RenderAcquire,
          R"({"id":7,"ok":true,"granted":true,"lease":"L-1","waited_ms":3})") ==
      "lease L-1\n"
      "waited_ms  3\n");
  CHECK(Render(RenderAcquire,
               R"({"ok":true,"granted":true,"lease":"L-2","waited_ms":0,
                   "remaining":{"requests":4,"usd":0.25}})") ==
        "lease L-2\n"
        "waited_ms  0\n"
        "remaining  requests=4 usd=0.25\n");
}

TEST_CASE("a denied acquire says why, where and when to retry", "[ctl]") {
  CHECK(Render(RenderAcquire,
               R"({"id":7,"ok":true,"granted":false,"reason":"rate_limited",
                   "scope":"user:alice","limit":"rpm","retry_after_ms":340})") ==
        "denied       rate_limited\n"
        "scope        user:alice\n"
        "limit        rpm\n"
        "retry_after  340ms\n");
  CHECK(Render(RenderAcquire,
               R"({"ok":true,"granted":false,"reason":"breaker_open",
                   "scope":"task:t-1","cause":"loop","retry_after_ms":1200})") ==
        "denied       breaker_open\n"
        "scope        task:t-1\n"
        "limit        -\n"
        "retry_after  1.2s\n"
        "cause        loop\n");
  CHECK(Render(RenderAcquire,
               R"({"ok":true,"granted":false,"reason":"too_large",
                   "scope":"global","limit":"tpm","retry_after_ms":null,
                   "shadow":[{"scope":"user:a","limit":"x"}]})") ==
        "denied       too_large\n"
        "scope        global\n"
        "limit        tpm\n"
        "retry_after  never\n"
        "shadow       limit=x scope=user:a\n");
}

TEST_CASE("a cap held by calls in flight shows what they hold", "[ctl]") {
  CHECK(Render(RenderAcquire,
               R"({"ok":true,"granted":false,"reason":"reserved",
                   "scope":"user:a","limit":"daily","held":0.9,
                   "remaining":{"usd":0.1},"capacity":{"usd":1.0},
                   "retry_after_ms":1200})") ==
        "denied       reserved\n"
        "scope        user:a\n"
        "limit        daily\n"
        "retry_after  1.2s\n"
        "held         0.9\n"
        "remaining    usd=0.1\n");
}

TEST_CASE("commit shows what was charged", "[ctl]") {
  CHECK(Render(RenderCommit,
               R"({"ok":true,"charged_tokens":1350,"charged_usd":0.0123})") ==
        "charged_tokens  1350\n"
        "charged_usd     0.0123\n");
  CHECK(Render(RenderCommit, R"({"ok":true,"charged_tokens":1,"charged_usd":0,
                                 "duplicate":true})") ==
        "charged_tokens  1\n"
        "charged_usd     0\n"
        "duplicate       true\n");
}

TEST_CASE("status prints limits, spend, reservations and breakers", "[ctl]") {
  const char* reply = R"({"ok":true,"scope":"user:alice",
    "limits":[{"scope":"user:alice","name":"daily","resource":"usd",
               "algorithm":"quota","limit":5.0,"used":1.23,"held":0.5,
               "remaining":3.27,"resets_in_ms":41000000},
              {"scope":"user:*","name":"rpm","resource":"requests",
               "algorithm":"fixed_window","limit":100,"used":57,"held":0,
               "remaining":43,"resets_in_ms":1200,"shadow":true},
              {"scope":"global","name":"rps","resource":"requests",
               "algorithm":"token_bucket","used":null}],
    "spend":{"requests":57,"tokens":12345,"usd":1.23},
    "reserved":{"requests":1,"tokens":1200,"usd":0.01},
    "breakers":[{"scope":"task:t-42","state":"open","cause":"loop",
                 "retry_in_ms":1200}]})";
  CHECK(Render(RenderStatus, reply) ==
        "scope user:alice\n"
        "\n"
        "SCOPE       NAME         RESOURCE  ALGORITHM     LIMIT  USED  HELD  "
        "REMAINING  RESETS_IN\n"
        "user:alice  daily        usd       quota             5  1.23   0.5  "
        "     3.27  11h23m20s\n"
        "user:*      rpm(shadow)  requests  fixed_window    100    57     0  "
        "       43  1.2s\n"
        "global      rps          requests  token_bucket      -     -     -  "
        "        -  -\n"
        "\n"
        "spend     requests=57 tokens=12345 usd=1.23\n"
        "reserved  requests=1 tokens=1200 usd=0.01\n"
        "\n"
        "SCOPE      STATE  CAUSE  RETRY_IN\n"
        "task:t-42  open   loop   1.2s\n");
}

TEST_CASE("status of a fresh subject has no limits or breakers", "[ctl]") {
  CHECK(Render(RenderStatus, R"({"ok":true,"scope":"task:t","limits":[],
      "spend":{"requests":0,"tokens":0,"usd":0},"breakers":[]})") ==
        "scope task:t\n"
        "\n"
        "no limits apply\n"
        "\n"
        "spend     requests=0 tokens=0 usd=0\n"
        "reserved  requests=- tokens=- usd=-\n"
        "\n"
        "no breakers open\n");
}

TEST_CASE("policy get prints the limits and breaker of a policy", "[ctl]") {
  const std::string expected =
      "scope user:alice\n"
      "\n"
      "NAME   RESOURCE  ALGORITHM     SETTINGS\n"
      "rps    requests  token_bucket  burst=100 per_ms=1000 rate=100\n"
      "daily  usd       quota         limit=5 period=day shadow=true\n"
      "\n"
      "BREAKER  SETTINGS\n"
      "loop     repeats=5 window_ms=60000\n"
      "state    open_backoff=2 open_ms=30000\n";
  const char* policy = R"({"limits":[
      {"name":"rps","resource":"requests","algorithm":"token_bucket",
       "rate":100,"per_ms":1000,"burst":100},
      {"name":"daily","resource":"usd","algorithm":"quota","limit":5.0,
       "period":"day","shadow":true}],
    "breaker":{"loop":{"repeats":5,"window_ms":60000},"open_ms":30000,
               "open_backoff":2.0}})";
  // Nested under "policy", or flat in the reply: both render the same.
  std::string nested =
      std::string(R"({"ok":true,"scope":"user:alice","policy":)") + policy +
      "}";
  CHECK(Render(RenderPolicyGet, nested.c_str()) == expected);
  json flat = json::parse(policy);
  flat["ok"] = true;
  flat["scope"] = "user:alice";
  CHECK(Render(RenderPolicyGet, flat.dump().c_str()) == expected);
}

TEST_CASE("policy get of a scope without a policy says so", "[ctl]") {
  CHECK(Render(RenderPolicyGet,
               R"({"ok":true,"scope":"user:bob","policy":null})") ==
        "no policy for user:bob\n");
  CHECK(Render(RenderPolicyGet, R"({"ok":true})", R"({"scope":"task:x"})") ==
        "no policy for task:x\n");
  CHECK(Render(RenderPolicyGet, R"({"ok":true,"scope":"global",
                                    "policy":{"limits":[]}})") ==
        "scope global\n\nno limits\n\nno breaker\n");
}

TEST_CASE("policy list prints each scope with its limit names", "[ctl]") {
  const std::string expected =
      "SCOPE       LIMITS     BREAKER\n"
      "user:*      rpm,daily  yes\n"
      "user:alice  -          no\n";
  CHECK(Render(RenderPolicyList, R"({"ok":true,"policies":{
      "user:*":{"limits":[{"name":"rpm"},{"name":"daily"}],
                "breaker":{"open_ms":1}},
      "user:alice":{"limits":[]}}})") == expected);
  CHECK(Render(RenderPolicyList, R"({"ok":true,"policies":[
      {"scope":"user:*","limits":[{"name":"rpm"},{"name":"daily"}],
       "breaker":{"open_ms":1}},
      {"scope":"user:alice"}]})") == expected);
  CHECK(Render(RenderPolicyList, R"({"ok":true,"policies":{}})") ==
        "no policies\n");
}

TEST_CASE("breaker list prints a table", "[ctl]") {
  CHECK(Render(RenderBreakers, R"({"ok":true,"breakers":[
      {"scope":"resource:openai","state":"half_open","cause":"errors",
       "retry_in_ms":0},
      {"scope":"task:t","state":"open","cause":"manual","retry_in_ms":60000}]})") ==
        "SCOPE            STATE      CAUSE   RETRY_IN\n"
        "resource:openai  half_open  errors  0ms\n"
        "task:t           open       manual  1m\n");
  CHECK(Render(RenderBreakers, R"({"ok":true,"breakers":[]})") ==
        "no breakers open\n");
}

TEST_CASE("busiest prints the top rows as a table", "[ctl]") {
  CHECK(Render(RenderTopRows, R"({"ok":true,"by":"task","rows":[
      {"subject":"t-42","grants":12,"denials":3,"tokens":1200,"usd":0.5,
       "uncounted_max":0,"waiters":1},
      {"subject":"t-7","grants":1,"denials":0,"tokens":0,"usd":0,
       "uncounted_max":2,"waiters":0}]})",
               R"({"by":"task"})") ==
        "TASK  GRANTS  DENIALS  TOKENS  USD  WAITERS  UNCOUNTED_MAX\n"
        "t-42      12        3    1200  0.5        1              0\n"
        "t-7        1        0       0    0        0              2\n");
  CHECK(Render(RenderTopRows, R"({"ok":true,"rows":[]})") ==
        "no acquires yet\n");
}

TEST_CASE("usage prints rows and a total", "[ctl]") {
  const char* reply = R"({"ok":true,"rows":[
      {"key":"gpt-4o","calls":3,"requests":3,"tokens":3000,"input_tokens":2000,
       "output_tokens":1000,"usd":0.015,"expired":0,"estimated":2},
      {"key":"haiku","calls":10,"requests":10,"tokens":500,"input_tokens":400,
       "output_tokens":100,"usd":0.000125,"expired":1,"estimated":0}]})";
  CHECK(Render(RenderUsage, reply, R"({"by":"model"})") ==
        "MODEL   CALLS  REQUESTS  TOKENS  INPUT_TOKENS  OUTPUT_TOKENS       "
        "USD  EXPIRED  ESTIMATED\n"
        "gpt-4o      3         3    3000          2000           1000     "
        "0.015        0          2\n"
        "haiku      10        10     500           400            100  "
        "0.000125        1          0\n"
        "total      13        13    3500          2400           1100  "
        "0.015125        1          2\n");
  CHECK(Render(RenderUsage, R"({"ok":true,"rows":[]})") == "no usage\n");
  CHECK(Render(RenderUsage, R"({"ok":true,"rows":[{"key":"t-1","calls":1}]})")
            .rfind("TASK ", 0) == 0);
}

TEST_CASE("metrics prints the text unchanged", "[ctl]") {
  CHECK(Render(RenderMetrics, R"({"ok":true,"text":"a 1\nb 2\n"})") ==
        "a 1\nb 2\n");
  CHECK(Render(RenderMetrics, R"({"ok":true,"text":"a 1"})") == "a 1\n");
  CHECK(Render(RenderMetrics, R"({"ok":true})") == "");
}

TEST_CASE("renderers survive replies of the wrong shape", "[ctl]") {
  const char* odd[] = {R"({"ok":true})", R"({"ok":true,"limits":5,
      "breakers":{"a":1},"spend":[],"rows":"x","policies":3,"policy":[1]})"};
  for (const char* reply : odd) {
    for (RenderFn render :
         {RenderPing, RenderOk, RenderDeleted, RenderAcquire, RenderCommit,
          RenderStatus, RenderPolicyGet, RenderPolicyList, RenderBreakers,
          RenderUsage, RenderMetrics}) {
      CHECK_NOTHROW(Render(render, reply));
    }
  }
}

}  // namespace
}  // namespace brake::ctl

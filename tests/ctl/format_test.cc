// Value formatting, number parsing, tables and the default socket path.
#include "ctl/format.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/socket_path.h"
#include "ctl/table.h"

namespace brake::ctl {
namespace {

using nlohmann::json;

TEST_CASE("decimals print with up to 6 places and no trailing zeros", "[ctl]") {
  CHECK(FormatDecimal(1.23) == "1.23");
  CHECK(FormatDecimal(5.0) == "5");
  CHECK(FormatDecimal(0.0123) == "0.0123");
  CHECK(FormatDecimal(0.000001) == "0.000001");
  CHECK(FormatDecimal(0.0000004) == "0");
  CHECK(FormatDecimal(-0.0000004) == "0");
  CHECK(FormatDecimal(2.5e-3) == "0.0025");
  CHECK(FormatDecimal(1234567.125) == "1234567.125");
  CHECK(FormatDecimal(-3.5) == "-3.5");
}

TEST_CASE("json values print for table cells", "[ctl]") {
  CHECK(FormatValue(json(nullptr)) == "-");
  CHECK(FormatValue(json("x y")) == "x y");
  CHECK(FormatValue(json(12345)) == "12345");
  CHECK(FormatValue(json(-7)) == "-7");
  CHECK(FormatValue(json(18446744073709551615ull)) == "18446744073709551615");
  CHECK(FormatValue(json(3.77)) == "3.77");
  CHECK(FormatValue(json(true)) == "true");
  CHECK(FormatValue(json::parse(R"([1,"a"])")) == R"([1,"a"])");
  CHECK(FormatField(json::parse(R"({"a":1})"), "a") == "1");
  CHECK(FormatField(json::parse(R"({"a":1})"), "b") == "-");
  CHECK(FormatField(json(5), "a") == "-");
  CHECK(FormatInline(json::parse(R"({"tokens":5,"usd":0.5})")) ==
        "tokens=5 usd=0.5");
  CHECK(FormatInline(json::parse(R"([{"a":1},{"b":2}])")) == "a=1, b=2");
  CHECK(FormatInline(json::object()) == "-");
}

TEST_CASE("durations print at a readable precision", "[ctl]") {
  CHECK(FormatDurationMs(0) == "0ms");
  CHECK(FormatDurationMs(340) == "340ms");
  CHECK(FormatDurationMs(1000) == "1s");
  CHECK(FormatDurationMs(1200) == "1.2s");
  CHECK(FormatDurationMs(59999) == "59.999s");
  CHECK(FormatDurationMs(60000) == "1m");
  CHECK(FormatDurationMs(41000000) == "11h23m20s");
  CHECK(FormatDurationMs(86400000 + 3600000) == "1d1h");
  CHECK(FormatDurationMs(-1500) == "-1.5s");
  CHECK(FormatDurationMs(INT64_MIN).substr(0, 2) == "-1");
  CHECK(FormatDurationField(json::parse(R"({"t":1200})"), "t") == "1.2s");
  CHECK(FormatDurationField(json::parse(R"({"t":1200.4})"), "t") == "1.2s");
  CHECK(FormatDurationField(json::parse(R"({"t":null})"), "t") == "-");
  CHECK(FormatDurationField(json::parse(R"({"t":"soon"})"), "t") == "-");
}

TEST_CASE("numbers on the command line are checked exactly", "[ctl]") {
  CHECK(*ParseNonNegativeInt("0").value == 0);
  CHECK(*ParseNonNegativeInt("9223372036854775807").value == INT64_MAX);
  CHECK_FALSE(ParseNonNegativeInt("9223372036854775808").value);
  CHECK_FALSE(ParseNonNegativeInt("").value);
  CHECK_FALSE(ParseNonNegativeInt("-1").value);
  CHECK_FALSE(ParseNonNegativeInt("+1").value);
  CHECK_FALSE(ParseNonNegativeInt(" 1").value);
  CHECK_FALSE(ParseNonNegativeInt("1e3").value);

  CHECK(*ParseNonNegativeDecimal("2.5").value == 2.5);
  CHECK(*ParseNonNegativeDecimal("10").value == 10);
  CHECK(*ParseNonNegativeDecimal(".5").value == 0.5);
  CHECK(*ParseNonNegativeDecimal("1e-3").value == 0.001);
  CHECK_FALSE(ParseNonNegativeDecimal("-0.5").value);
  CHECK_FALSE(ParseNonNegativeDecimal("inf").value);
  CHECK_FALSE(ParseNonNegativeDecimal("0x10").value);
  CHECK_FALSE(ParseNonNegativeDecimal("1.2.3").value);
  CHECK_FALSE(ParseNonNegativeDecimal("").value);

  CHECK(*ParseSinceMs("1970-01-01").value == 0);
  CHECK(*ParseSinceMs("2024-02-29").value == 1709164800000);
  CHECK(*ParseSinceMs("1234").value == 1234);
  CHECK_FALSE(ParseSinceMs("2023-02-29").value);
  CHECK_FALSE(ParseSinceMs("2024-13-01").value);
  CHECK_FALSE(ParseSinceMs("1969-12-31").value);
  CHECK_FALSE(ParseSinceMs("2024-1-01x").value);
  CHECK_FALSE(ParseSinceMs("-5").value);
}

TEST_CASE("tables align columns and right-align numbers", "[ctl]") {
  Table table({"NAME", "USED", "ALGORITHM"});
  table.AddRow({"rpm", "5", "fixed_window"});
  table.AddRow({"daily", "1.25", "quota"});
  table.AddRow({"tpm", "-", "sliding_log"});
  std::ostringstream out;
  table.Render(out);
  CHECK(out.str() ==
        "NAME   USED  ALGORITHM\n"
        "rpm       5  fixed_window\n"
        "daily  1.25  quota\n"
        "tpm       -  sliding_log\n");
}

TEST_CASE("tables without headers are key-value lists", "[ctl]") {
  Table table;
  table.AddRow({"denied", "rate_limited"});
  table.AddRow({"retry_after_ms", "340"});
  table.AddRow({"é", "x"});
  std::ostringstream out;
  table.Render(out);
  CHECK(out.str() ==
        "denied          rate_limited\n"
        "retry_after_ms  340\n"
        "é               x\n");
  std::ostringstream empty;
  Table().Render(empty);
  CHECK(empty.str().empty());
  Table headers_only({"A", "B"});
  std::ostringstream header;
  headers_only.Render(header);
  CHECK(header.str() == "A  B\n");
}

TEST_CASE("the default socket path needs no root", "[ctl]") {
  CHECK(DefaultSocketPathFor("/run/user/1000", 1000) ==
        "/run/user/1000/brake/braked.sock");
  CHECK(DefaultSocketPathFor("/run/user/1000/", 1000) ==
        "/run/user/1000/brake/braked.sock");
  CHECK(DefaultSocketPathFor("", 1000) == "/tmp/brake-1000/braked.sock");
  CHECK(DefaultSocketPathFor("", 0) == "/tmp/brake-0/braked.sock");
  CHECK_FALSE(DefaultSocketPath().empty());
}

}  // namespace
}  // namespace brake::ctl

// Figures and lines as `brakectl top` shows them: rates, counts and their
// JSON form, where a figure the daemon does not report is absent (nullopt),
// shown as "-" or null, never as 0; times; lines cut to the screen. Pure
// functions; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace brake::ctl {

// "1234", "12.5", "0.25": rates and gauges, fewer decimals as they grow;
// "-" when absent or not finite.
std::string FormatRate(std::optional<double> v);
// Counters and gauges: integers in full, fractions by FormatDecimal; "-"
// when absent.
std::string FormatCount(std::optional<double> v);
// An integer or a number for JSON output; null when absent.
nlohmann::json NumberJson(std::optional<double> v);
// The rate of a counter that went from `before` to `now` in `dt_ms`; a
// counter that went down was reset (the daemon restarted), so all of `now`
// is new, as Prometheus' rate() has it. nullopt when `dt_ms` <= 0.
std::optional<double> PerSecond(double before, double now, int64_t dt_ms);

// Milliseconds with 3 decimals below 10, else 1: "2.000", "12.5".
std::string FormatMs(double ms);
// The time of day of `wall_ms` (ms since the epoch): "12:34:56 UTC".
std::string FormatClock(int64_t wall_ms);
// The first `width` code points of `line` (all of it when `width` <= 0).
std::string Truncate(const std::string& line, int width);
// Appends the lines of `text` (without their newlines) to `lines`.
void AppendLines(const std::string& text, std::vector<std::string>* lines);

}  // namespace brake::ctl

#include "ctl/top_format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "ctl/format.h"
#include "ctl/table.h"

namespace brake::ctl {

std::string FormatRate(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "-";
  char buf[64];
  const double a = std::fabs(*v);
  if (a == 0) return "0";
  if (a >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", *v);
  } else if (a >= 1) {
    std::snprintf(buf, sizeof buf, "%.1f", *v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", *v);
  }
  return buf;
}

std::string FormatCount(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "-";
  if (*v == std::floor(*v) && std::fabs(*v) < 9e15) {
    return std::to_string(static_cast<int64_t>(*v));
  }
  return FormatDecimal(*v);
}

nlohmann::json NumberJson(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  if (*v == std::floor(*v) && std::fabs(*v) < 9e15) {
    return static_cast<int64_t>(*v);
  }
  return *v;
}

std::optional<double> PerSecond(double before, double now, int64_t dt_ms) {
  if (dt_ms <= 0) return std::nullopt;
  const double delta = now >= before ? now - before : now;
  return delta * 1000.0 / static_cast<double>(dt_ms);
}

std::string FormatMs(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ms < 10 ? "%.3f" : "%.1f", ms);
  return buf;
}

std::string FormatClock(int64_t wall_ms) {
  int64_t s = (wall_ms / 1000) % 86400;
  if (s < 0) s += 86400;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d UTC",
                static_cast<int>(s / 3600), static_cast<int>(s / 60 % 60),
                static_cast<int>(s % 60));
  return buf;
}

std::string Truncate(const std::string& line, int width) {
  if (width <= 0 || DisplayWidth(line) <= static_cast<size_t>(width)) {
    return line;
  }
  size_t points = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) {
      if (points == static_cast<size_t>(width)) return line.substr(0, i);
      ++points;
    }
  }
  return line;
}

void AppendLines(const std::string& text, std::vector<std::string>* lines) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines->push_back(line);
}

}  // namespace brake::ctl

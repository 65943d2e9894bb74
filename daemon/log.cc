#include "daemon/log.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace brake {
namespace {

LogLevel g_level = LogLevel::kInfo;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "INFO";
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }

void Log(LogLevel level, const char* format, ...) {
  if (level < g_level) return;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc;
  gmtime_r(&ts.tv_sec, &utc);
  char line[2048];
  int n = static_cast<int>(strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &utc));
  n += std::snprintf(line + n, sizeof(line) - n, ".%03ldZ %s ",
                     ts.tv_nsec / 1'000'000, LevelName(level));
  va_list args;
  va_start(args, format);
  int m = std::vsnprintf(line + n, sizeof(line) - n - 1, format, args);
  va_end(args);
  n = m < 0 ? n : std::min<int>(n + m, static_cast<int>(sizeof(line)) - 2);
  line[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, n);
  (void)ignored;
}

}  // namespace brake

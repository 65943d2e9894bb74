// Log: timestamped lines on stderr, braked's only log sink.
//
// "2026-11-30T12:00:00.123Z INFO listening on /run/user/1000/brake/braked.sock"
// Loop thread and storage thread may both log; each line is one write(2).
#pragma once

namespace brake {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

void Log(LogLevel level, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
// Lines below `level` are dropped (default kInfo).
void SetLogLevel(LogLevel level);

}  // namespace brake

// FUZZ_CHECK: the invariant check of the fuzz targets.
//
// A failed check prints what was expected and aborts, which libFuzzer reports
// as a crash (and saves the input) and the corpus-replay tests report as a
// failed test. Unlike assert() it stays on in release builds, where fuzzing
// and the replay tests run. Any thread.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, what)                                             \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %s\n", __FILE__, \
                   __LINE__, #cond, std::string(what).c_str());            \
      std::abort();                                                        \
    }                                                                      \
  } while (0)

// Corpus replay: runs a fuzz target's LLVMFuzzerTestOneInput over files,
// without libFuzzer, so that any compiler (gcc included) and every ctest run
// replays the committed corpus and crash reproducers.
//
// Usage: TARGET_replay PATH...  (a PATH that is a directory is replayed file
// by file, recursively, in name order). Exit status 0 when every input ran;
// 1 when a path cannot be read or holds no inputs. A failed check in the
// target aborts, which fails the test.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool Collect(const fs::path& path, std::vector<fs::path>* files) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->is_regular_file(ec)) files->push_back(it->path());
    }
    return !ec;
  }
  if (fs::is_regular_file(path, ec)) {
    files->push_back(path);
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!Collect(argv[i], &files)) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[i]);
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "%s: no inputs\n", argv[0]);
    return 1;
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], file.c_str());
      return 1;
    }
    std::ostringstream bytes;
    bytes << in.rdbuf();
    const std::string text = bytes.str();
    // A copy in its own allocation, as libFuzzer gives it: reads past the end
    // are caught by ASan in sanitizer builds. Never null, even when empty.
    std::unique_ptr<uint8_t[]> input(new uint8_t[text.size() + 1]);
    std::memcpy(input.get(), text.data(), text.size());
    LLVMFuzzerTestOneInput(input.get(), text.size());
  }
  std::printf("%zu inputs replayed\n", files.size());
  return 0;
}

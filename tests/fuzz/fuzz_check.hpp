// Shared by the fuzz targets: a contract check that reports and aborts (so
// libFuzzer records the input as a crash), and a scratch file for readers
// that take a path.

#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

/// Aborts with file, line and the broken contract when `cond` is false.
#define FUZZ_CHECK(cond, what)                                                 \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: contract broken: %s (%s)\n", __FILE__,      \
                   __LINE__, what, #cond);                                     \
      std::abort();                                                            \
    }                                                                          \
  } while (false)

namespace troupe::fuzz {

/// A file under /dev/shm (or /tmp) unique to this process, rewritten per
/// input and removed at exit.
class scratch_file {
public:
  /// `suffix` ends the name (a reader may look at it, e.g. ".gz").
  explicit scratch_file(const std::string& suffix) {
    const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string{dir} + "/troupe-fuzz-" + std::to_string(::getpid())
            + "-" + std::to_string(next_id()) + suffix;
  }
  ~scratch_file() {
    std::remove(path_.c_str());
  }
  scratch_file(const scratch_file&) = delete;
  scratch_file& operator=(const scratch_file&) = delete;

  /// Replaces the file's content by `size` bytes at `data`.
  void write(const std::uint8_t* data, std::size_t size) const {
    std::ofstream out{path_, std::ios::binary | std::ios::trunc};
    out.write(reinterpret_cast<const char*>(data),
              static_cast<std::streamsize>(size));
    FUZZ_CHECK(out.good(), "cannot write the scratch file");
  }

  const std::string& path() const noexcept {
    return path_;
  }

private:
  static int next_id() {
    static int id = 0;
    return id++;
  }
  std::string path_;
};

} // namespace troupe::fuzz

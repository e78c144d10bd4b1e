#pragma once

// What the resume tests share: a run's final report, a scratch directory
// removed at exit, and a directory holding one checkpoint of another.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "capture.hpp"

namespace troupe::test {

/// The last JSON object a successful run printed: its final report.
inline nlohmann::json last_json(const run_result& r) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto pos = r.out.rfind("\n{");
  return nlohmann::json::parse(
      r.out.substr(pos == std::string::npos ? 0 : pos));
}

/// A directory `name`_PID in the build tree, emptied when made and removed
/// with the object (checkpoints of mlp runs add up to a few hundred MB).
class scratch_dir {
public:
  explicit scratch_dir(const std::string& name)
      : path_(std::filesystem::path{TROUPE_BINARY_DIR}
              / (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const noexcept {
    return path_;
  }

private:
  std::filesystem::path path_;
};

/// A directory `root`/`name` holding only checkpoint `step` of `from`.
inline std::string only_checkpoint(const std::filesystem::path& root,
                                   const std::filesystem::path& from,
                                   std::uint64_t step,
                                   const std::string& name) {
  auto to = root / name;
  std::filesystem::remove_all(to);
  std::filesystem::create_directories(to);
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%012llu",
                static_cast<unsigned long long>(step));
  std::filesystem::copy(from / buf, to / buf,
                        std::filesystem::copy_options::recursive);
  return to.string();
}

} // namespace troupe::test

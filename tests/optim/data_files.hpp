#pragma once

// Helpers shared by the data-file reader tests: a temp dir, writers for
// crafted IDX / text / gzip files and a matcher for data_error messages.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <sys/resource.h>
#include <vector>

#include <catch2/catch.hpp>
#include <zlib.h>

#include "optim/dataset.hpp"

namespace troupe::test {

namespace fs = std::filesystem;

/// Raw file content.
using bytes = std::vector<unsigned char>;

/// A fresh directory under the system temp dir, removed at scope exit.
struct temp_dir {
  fs::path path;

  temp_dir() {
    auto pattern
        = (fs::temp_directory_path() / "troupe_dataset_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }

  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }

  std::string file(const std::string& name) const {
    return (path / name).string();
  }
};

/// Appends `x` big-endian, as IDX headers store it.
inline void put_u32(bytes& out, std::uint32_t x) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<unsigned char>(x >> shift));
}

/// An IDX3 image file: header for n x h x w, then `pixels` (any length).
inline bytes idx_images(std::uint32_t n, std::uint32_t h, std::uint32_t w,
                        const bytes& pixels) {
  bytes out;
  put_u32(out, 0x00000803);
  put_u32(out, n);
  put_u32(out, h);
  put_u32(out, w);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

/// An IDX1 label file holding `labels`.
inline bytes idx_labels(const bytes& labels) {
  bytes out;
  put_u32(out, 0x00000801);
  put_u32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

/// Writes `data` to `path` as is; returns the path.
inline std::string write_plain(const std::string& path, const bytes& data) {
  std::ofstream out{path, std::ios::binary};
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size()));
  REQUIRE(out.good());
  return path;
}

/// Writes `data` gzip-compressed to `path`; returns the path.
inline std::string write_gz(const std::string& path, const bytes& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!data.empty())
    REQUIRE(gzwrite(f, data.data(), static_cast<unsigned>(data.size()))
            == static_cast<int>(data.size()));
  REQUIRE(gzclose(f) == Z_OK);
  return path;
}

/// Writes `text` to `path`; returns the path.
inline std::string write_text(const std::string& path,
                              const std::string& text) {
  return write_plain(path, bytes(text.begin(), text.end()));
}

/// The message of the data_error thrown by `f`, or "" if none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const troupe::optim::data_error& e) {
    return e.what();
  }
  return "";
}

/// Checks that `msg` starts with `path` and contains every part of `parts`.
inline void check_message(const std::string& msg, const std::string& path,
                          std::initializer_list<std::string> parts) {
  INFO("message: " << msg);
  CHECK(msg.rfind(path, 0) == 0);
  for (const auto& part : parts)
    CHECK_THAT(msg, Catch::Contains(part));
}

/// Reads the first `n` inflated bytes of a (gzip) file with zlib directly.
inline bytes raw_prefix(const std::string& path, unsigned n) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  bytes out(n);
  REQUIRE(gzread(f, out.data(), n) == static_cast<int>(n));
  gzclose(f);
  return out;
}

/// Peak resident set size of this process in KiB.
inline long max_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

/// Pixels of three 2x2 images.
inline const bytes pixels_3x2x2{0, 255, 51, 102, 1, 2, 3, 4, 10, 20, 30, 40};

} // namespace troupe::test

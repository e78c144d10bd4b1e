#pragma once

// Internal to troupe_optim's readers: include only from optim/*.cpp (the
// library links zlib privately).

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <utility>

#include <zlib.h>

#include "optim/dataset.hpp"

namespace troupe::optim::detail {

/// Reads a file sequentially through zlib, which inflates gzip content and
/// passes plain content through unchanged (detected by content, not by
/// name). Every failure throws data_error starting with the path.
class gz_file {
public:
  /// Opens `path`; throws data_error if it is missing, not a regular file or
  /// unreadable.
  explicit gz_file(std::string path) : path_(std::move(path)) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
      fail(std::string{"cannot open: "} + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      fail("not a regular file");
    disk_size_ = static_cast<std::uint64_t>(st.st_size);
    errno = 0;
    file_ = ::gzopen(path_.c_str(), "rb");
    if (file_ == nullptr)
      fail(std::string{"cannot open: "}
           + (errno != 0 ? std::strerror(errno) : "out of memory"));
    ::gzbuffer(file_, 1u << 20);
  }

  gz_file(const gz_file&) = delete;
  gz_file& operator=(const gz_file&) = delete;

  ~gz_file() {
    ::gzclose_r(file_);
  }

  /// Reads up to `n` bytes into `buf` in large chunks; returns fewer only at
  /// the end of the data, including the premature end of a cut gzip stream
  /// (callers report those with byte counts). Throws data_error on corrupt
  /// compressed data.
  std::size_t read(void* buf, std::size_t n) {
    auto* out = static_cast<unsigned char*>(buf);
    std::size_t got = 0;
    while (got < n) {
      auto chunk = static_cast<unsigned>(
          std::min<std::size_t>(n - got, std::size_t{1} << 30));
      int k = ::gzread(file_, out + got, chunk);
      if (k < 0)
        fail_zlib();
      got += static_cast<std::size_t>(k);
      if (static_cast<unsigned>(k) < chunk) {
        check_zlib();
        break;
      }
    }
    return got;
  }

  /// Whether the content is stored uncompressed (valid after a read).
  bool plain() {
    return ::gzdirect(file_) != 0;
  }

  /// Starts reading from the beginning again.
  void rewind() {
    if (::gzrewind(file_) != 0)
      fail_zlib();
  }

  /// The ISIZE field of a gzip file's trailer: the inflated size modulo 2^32
  /// of its last member (of the whole file if it has one member, as gzip
  /// writes it); 0 if the file is not gzip or too short to have a trailer.
  std::uint32_t trailer_size() const {
    std::FILE* f = std::fopen(path_.c_str(), "rb");
    if (f == nullptr)
      return 0;
    unsigned char head[2] = {0, 0};
    unsigned char tail[4] = {0, 0, 0, 0};
    bool ok = disk_size_ >= 18 && std::fread(head, 1, 2, f) == 2
              && head[0] == 0x1f && head[1] == 0x8b
              && std::fseek(f, -4, SEEK_END) == 0
              && std::fread(tail, 1, 4, f) == 4;
    std::fclose(f);
    if (!ok)
      return 0;
    return std::uint32_t{tail[0]} | (std::uint32_t{tail[1]} << 8)
           | (std::uint32_t{tail[2]} << 16) | (std::uint32_t{tail[3]} << 24);
  }

  /// Size of the file on disk in bytes.
  std::uint64_t disk_size() const noexcept {
    return disk_size_;
  }

  /// The path it was opened with.
  const std::string& path() const noexcept {
    return path_;
  }

  /// Throws data_error with `what` prefixed by the path.
  [[noreturn]] void fail(const std::string& what) const {
    throw data_error(path_ + ": " + what);
  }

private:
  /// Throws on a zlib error other than an input that ends too early
  /// (Z_BUF_ERROR), which shows as a short read instead.
  void check_zlib() {
    int code = Z_OK;
    ::gzerror(file_, &code);
    if (code != Z_OK && code != Z_STREAM_END && code != Z_BUF_ERROR)
      fail_zlib();
  }

  [[noreturn]] void fail_zlib() {
    int code = Z_OK;
    const char* raw = ::gzerror(file_, &code);
    std::string msg = raw != nullptr && *raw != '\0' ? raw : "read error";
    // zlib prefixes its messages with the path, which fail() adds anyway.
    if (msg.rfind(path_ + ": ", 0) == 0)
      msg.erase(0, path_.size() + 2);
    fail("corrupt gzip data (" + msg + ")");
  }

  std::string path_;
  gzFile file_ = nullptr;
  std::uint64_t disk_size_ = 0;
};

} // namespace troupe::optim::detail

// The layout of a shared-memory segment and the counters, shared by the
// writer's (shm.cpp) and the reader's (shm_reader.cpp) side of
// messages/shm.hpp. Not a public header.

#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "messages/shm.hpp"

namespace troupe::messages::shm {

class hold {
public:
  virtual ~hold() = default;
};

namespace detail {
inline constexpr std::uint64_t magic = 0x314d48535052544bULL; // "KTRPSHM1"
inline constexpr std::uint64_t header_bytes = 64;
inline constexpr std::uint64_t block_header = 16;
inline constexpr std::uint64_t align = 64;
inline constexpr std::uint64_t min_segment = std::uint64_t{16} << 20;
/// A writer's segments: virtual size (pages are touched as blocks use them,
/// and the ring starts over whenever it is empty).
inline constexpr std::uint64_t segment_bytes = std::uint64_t{64} << 20;
inline constexpr std::uint64_t max_segment = std::uint64_t{1} << 30;
inline constexpr std::size_t max_mapped = 256;
inline constexpr const char* memfd_name = "troupe-shm";

/// The segment's first 64 bytes (both sides read them through the mapping).
struct header {
  std::uint64_t magic;
  std::uint64_t nonce;
  std::uint64_t size;
  std::uint32_t pid;
  std::atomic<std::uint32_t> read; ///< a reader proved it maps this
};
static_assert(sizeof(header) <= header_bytes);

/// Each block's first 16 bytes: its state (full when written, taken while
/// a reader views it, set free by the reader), its generation and its
/// payload size.
struct block {
  std::atomic<std::uint32_t> state;
  std::uint32_t generation;
  std::uint64_t bytes;
};
static_assert(sizeof(block) == block_header);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

inline constexpr std::uint32_t block_free = 0, block_full = 1, block_taken = 2;

inline std::uint64_t round_up(std::uint64_t n) {
  return (n + align - 1) / align * align;
}

struct totals {
  std::atomic<std::uint64_t> written{0}, inline_{0}, read{0}, refused{0},
      bytes_written{0}, bytes_read{0}, segments{0}, mapped{0};
};
inline totals& count() {
  static totals t;
  return t;
}

} // namespace detail

} // namespace troupe::messages::shm

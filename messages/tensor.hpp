#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// Forward declarations keep CAF's headers out of every includer of this file.
namespace caf {
class serializer;
class deserializer;
class error;
} // namespace caf

namespace troupe::messages {

/// A contiguous block of floats that crosses the wire as its element count
/// (uint64) followed by one raw little-endian block, never element by element.
namespace shm {
class channel;
} // namespace shm

class tensor {
public:
  /// Largest element count a deserializer accepts (4 GiB of floats is already
  /// beyond BASP's 32-bit payload length).
  static constexpr std::uint64_t max_size = std::uint64_t{1} << 30;

  /// Creates an empty tensor.
  tensor() = default;

  /// Takes ownership of `values`.
  explicit tensor(std::vector<float> values) : values_(std::move(values)) {}

  /// Copies `size` floats starting at `data`.
  tensor(const float* data, std::size_t size) : values_(data, data + size) {}

  /// Returns the number of elements.
  std::size_t size() const noexcept {
    return values_.size();
  }

  /// Returns whether the tensor holds no element.
  bool empty() const noexcept {
    return values_.empty();
  }

  /// Returns a pointer to the first element.
  float* data() noexcept {
    return values_.data();
  }

  /// Returns a pointer to the first element.
  const float* data() const noexcept {
    return values_.data();
  }

  /// Returns the underlying buffer.
  std::vector<float>& values() noexcept {
    return values_;
  }

  /// Returns the underlying buffer.
  const std::vector<float>& values() const noexcept {
    return values_;
  }

  /// Returns element `i`.
  float& operator[](std::size_t i) noexcept {
    return values_[i];
  }

  /// Returns element `i`.
  float operator[](std::size_t i) const noexcept {
    return values_[i];
  }

  /// Compares bit patterns, so NaN equals NaN with the same payload and -0
  /// differs from +0.
  friend bool operator==(const tensor& x, const tensor& y) noexcept;

  /// Negation of `==`.
  friend bool operator!=(const tensor& x, const tensor& y) noexcept {
    return !(x == y);
  }

  // No begin()/end() on purpose: CAF 0.17 would treat an iterable type as a
  // sequence and encode each float through its (broken) float encoder.

  /// Sends the values through shared memory when this tensor is serialized
  /// for a process on this host (messages/shm.hpp): `c` is the channel to
  /// the destination node (null: inline). The values stay here too.
  void share_with(std::shared_ptr<shm::channel> c) noexcept {
    share_ = std::move(c);
  }

  const std::shared_ptr<shm::channel>& shared_with() const noexcept {
    return share_;
  }

private:
  std::vector<float> values_;
  std::shared_ptr<shm::channel> share_;
};

/// Writes the element count (uint64) and one raw block of `size() * 4`
/// bytes. Shared with a channel (share_with) whose reader proved it maps
/// it: the count with its top bit set and a reference to a block of the
/// segment (pid, fd: uint32; nonce, offset: uint64; generation: uint32)
/// instead of the block; not proved yet: the count with bit 62 set, an
/// offer (pid, fd, nonce), then the raw block.
caf::error inspect(caf::serializer& f, tensor& x);

/// Reads what the serializer overload wrote; rejects a count above
/// `tensor::max_size` or above the bytes left in a binary_deserializer before
/// allocating anything, and a reference that does not check out against a
/// segment this process mapped (messages/shm.hpp).
caf::error inspect(caf::deserializer& f, tensor& x);

/// Returns a short summary for logs: the size and the first few values.
std::string to_string(const tensor& x);

} // namespace troupe::messages

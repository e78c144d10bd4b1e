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

namespace shm {
class channel;
class hold;
} // namespace shm

/// Bytes tensors copied, by where from and where to (this process), for the
/// benchmarks' copy count (issue [14]): a payload crosses a hop between a
/// model's buffer and the socket or segment with at most one copy per side.
struct copy_counters {
  std::uint64_t into_tensor = 0;  ///< a buffer copied into a tensor's memory
  std::uint64_t into_segment = 0; ///< a buffer or tensor into a segment block
  std::uint64_t serialized = 0;   ///< a tensor's values into a wire buffer
  std::uint64_t deserialized = 0; ///< a wire buffer into a tensor's memory
  std::uint64_t from_segment = 0; ///< a segment block into a tensor's memory
  std::uint64_t copied_out = 0;   ///< a tensor into a model's buffer
};
copy_counters copies() noexcept;

/// A contiguous block of floats that crosses the wire as its element count
/// (uint64) followed by one raw little-endian block, never element by element.
///
/// A tensor owns its values (a vector), or is a read-only view of a block of
/// a shared-memory segment (messages/shm.hpp): made by shared_copy() on the
/// sender's side, or by deserializing a reference into a tensor that allows
/// views (params_msg's). The const accessors read a view in place; the
/// non-const ones first copy it into the tensor's own memory. A view's
/// block is held until the last tensor viewing it is gone. A view a peer
/// wrote may still be rewritten by it: copy it (copy_to) before checking.

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
  tensor(const float* data, std::size_t size);

  /// Copies `size` floats starting at `data` for sending to the node of
  /// channel `c` (messages/shm.hpp; null: not on this host): straight into
  /// a block of its segment once its reader proved it maps it (the one
  /// copy of the sender's side; the message then carries a reference),
  /// else into the tensor's own memory, shared with `c` (an offer).
  static tensor shared_copy(std::shared_ptr<shm::channel> c, const float* data,
                            std::size_t size);

  /// Returns the number of elements.
  std::size_t size() const noexcept {
    return view_ ? view_size_ : values_.size();
  }

  /// Returns whether the tensor holds no element.
  bool empty() const noexcept {
    return size() == 0;
  }

  /// Returns a pointer to the first element (a view is copied first).
  float* data() {
    own();
    return values_.data();
  }

  /// Returns a pointer to the first element (a view's, in place).
  const float* data() const noexcept {
    return view_ ? view_data_ : values_.data();
  }

  /// Returns the underlying buffer (a view is copied first).
  std::vector<float>& values() {
    own();
    return values_;
  }

  /// Returns element `i` (a view is copied first).
  float& operator[](std::size_t i) {
    own();
    return values_[i];
  }

  /// Returns element `i`.
  float operator[](std::size_t i) const noexcept {
    return data()[i];
  }

  /// Whether the values are a view of a shared-memory block.
  bool is_view() const noexcept {
    return static_cast<bool>(view_);
  }

  /// Copies a view into the tensor's own memory and lets the block go.
  void own();

  /// Copies the values to `dest` (size() floats): from a view, the one
  /// copy between the segment and a model's buffer.
  void copy_to(float* dest) const noexcept;

  /// Lets deserialization leave a reference's values in the segment (a
  /// view) instead of copying them: for messages whose receivers only copy
  /// the values out (params_msg). Not sent.
  void allow_view() noexcept {
    view_ok_ = true;
  }

  bool view_allowed() const noexcept {
    return view_ok_;
  }

  /// Makes this tensor a view of `size` floats at `data`, held by `keep`.
  void set_view(const float* data, std::size_t size,
                std::shared_ptr<const shm::hold> keep) noexcept {
    values_.clear();
    view_data_ = data;
    view_size_ = size;
    view_ = std::move(keep);
  }

  /// What holds a view's block (null: not a view).
  const std::shared_ptr<const shm::hold>& view_keeper() const noexcept {
    return view_;
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
  const float* view_data_ = nullptr;
  std::size_t view_size_ = 0;
  std::shared_ptr<const shm::hold> view_;
  bool view_ok_ = false;
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

#pragma once

// The size of a message between simulated nodes (sim/scheduler.hpp): what
// CAF 0.17's binary serializer would write, as caf::detail::serialized_size
// counts it, with the payload apart from the rest, so that a simulation can
// cost payloads as if the model were bigger (troupe simulate
// --virtual-params, docs/simulation.md).

#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/serializer.hpp>

namespace caf {
class actor_system;
class type_erased_tuple;
}

namespace troupe::sim {

/// A message's bytes: its payload (tensor values, compressed blocks) and
/// the rest (headers, small fields).
struct message_size {
  std::uint64_t header = 0;
  std::uint64_t payload = 0;
  std::uint64_t total() const noexcept {
    return header + payload;
  }
};

/// A serializer that writes nothing and counts the bytes CAF 0.17's binary
/// serializer would write (the same sum as caf::detail::serialized_size),
/// the raw value block of a messages::tensor apart: a tensor writes its
/// element count (uint64) and then one raw block of 4 bytes per element,
/// so a raw block right after a uint64 that counts its floats is a
/// tensor's payload. Any other raw block (a byte sequence's) is header.
class size_counter final : public caf::serializer {
public:
  using super = caf::serializer;
  using super::super;

  /// What was counted so far.
  const message_size& result() const noexcept {
    return size_;
  }

  caf::error begin_object(std::uint16_t& nr, std::string& name) override;
  caf::error end_object() override;
  caf::error begin_sequence(std::size_t& list_size) override;
  caf::error end_sequence() override;
  caf::error apply_raw(std::size_t num_bytes, void* data) override;

protected:
  caf::error apply_impl(std::int8_t& x) override;
  caf::error apply_impl(std::uint8_t& x) override;
  caf::error apply_impl(std::int16_t& x) override;
  caf::error apply_impl(std::uint16_t& x) override;
  caf::error apply_impl(std::int32_t& x) override;
  caf::error apply_impl(std::uint32_t& x) override;
  caf::error apply_impl(std::int64_t& x) override;
  caf::error apply_impl(std::uint64_t& x) override;
  caf::error apply_impl(float& x) override;
  caf::error apply_impl(double& x) override;
  caf::error apply_impl(long double& x) override;
  caf::error apply_impl(std::string& x) override;
  caf::error apply_impl(std::u16string& x) override;
  caf::error apply_impl(std::u32string& x) override;

private:
  /// Counts `n` header bytes; forgets a pending element count.
  caf::error fixed(std::size_t n) noexcept;

  message_size size_;
  /// The last value written, if it was a uint64 (a tensor's count).
  std::uint64_t count_ = 0;
  bool counted_ = false;
};

/// Measures `content` (a message's elements) as sim/scheduler.cpp sends it:
/// the tensors' values and the packed blocks of compressed pushes and
/// gossip (messages/compressed.hpp) are payload. `sys` is the serializer's
/// context: without one, CAF 0.17 refuses to save a message that was built
/// from type-erased values (a request's reply is one) and actor handles.
/// Falls back to 64 header bytes if the content cannot be serialized.
message_size measure(const caf::type_erased_tuple& content,
                     caf::actor_system* sys = nullptr);

/// Payload bytes counted as if the model had `virtual_params` parameters
/// instead of `real_params`: bytes × virtual / real, rounded to the
/// nearest, exact in integers. Both 0 (or equal): unscaled.
struct payload_scale {
  std::uint64_t virtual_params = 0;
  std::uint64_t real_params = 0;

  bool identity() const noexcept {
    return virtual_params == 0 || real_params == 0
           || virtual_params == real_params;
  }
  /// `bytes` scaled (saturates at 2^64 - 1).
  std::uint64_t apply(std::uint64_t bytes) const noexcept;
  /// virtual / real as a double (1 if unscaled).
  double ratio() const noexcept;
};

} // namespace troupe::sim

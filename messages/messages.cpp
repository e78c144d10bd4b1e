#include "messages/messages.hpp"

#include <caf/detail/stringification_inspector.hpp>

#include "messages/compressed.hpp"
#include "messages/consensus.hpp"
#include "messages/control.hpp"
#include "messages/gossip.hpp"
#include "messages/metrics.hpp"

namespace troupe::messages {

namespace {

/// Prints `x` through its inspect() overload; calling deep_to_string here
/// would recurse into the to_string being defined.
template <class T>
std::string stringify(const T& x) {
  std::string result;
  caf::detail::stringification_inspector f{result};
  inspect(f, const_cast<T&>(x));
  return result;
}

} // namespace

bool operator==(const push_msg& x, const push_msg& y) noexcept {
  return x.worker == y.worker && x.seq == y.seq && x.version == y.version
         && x.offset == y.offset && x.clock == y.clock && x.samples == y.samples
         && x.values == y.values;
}

std::string to_string(const push_msg& x) {
  return stringify(x);
}

bool operator==(const fetch_msg& x, const fetch_msg& y) noexcept {
  return x.worker == y.worker && x.offset == y.offset && x.size == y.size
         && x.clock == y.clock;
}

std::string to_string(const fetch_msg& x) {
  return stringify(x);
}

bool operator==(const params_msg& x, const params_msg& y) noexcept {
  return x.version == y.version && x.offset == y.offset && x.values == y.values;
}

std::string to_string(const params_msg& x) {
  return stringify(x);
}

bool operator==(const hello_msg& x, const hello_msg& y) noexcept {
  return x.version == y.version && x.node == y.node && x.token == y.token
         && x.worker_slots == y.worker_slots && x.shard_slots == y.shard_slots
         && x.heartbeat_ms == y.heartbeat_ms && x.timeout_ms == y.timeout_ms;
}

std::string to_string(const hello_msg& x) {
  // The token is a secret: logs only say whether there is one.
  auto copy = x;
  if (!copy.token.empty())
    copy.token = "***";
  return stringify(copy);
}

std::string to_string(const real& x) {
  return stringify(x);
}

std::string to_string(const worker_pushes& x) {
  return stringify(x);
}

std::string to_string(const progress_msg& x) {
  return stringify(x);
}

std::string to_string(const worker_stats& x) {
  return stringify(x);
}

std::string to_string(const shard_stats& x) {
  return stringify(x);
}

std::string to_string(const eval_msg& x) {
  return stringify(x);
}

std::string to_string(const node_metrics& x) {
  return stringify(x);
}

// Sizes as caf::binary_serializer writes them: fixed-width integers, a
// tensor as its uint64 count plus 4 bytes per value, plus the 4-byte type
// name reference a message carries per element.
std::uint64_t wire_size(const push_msg& x) {
  return 4 + 4 + 8 * 4 + 4 + 8 + 4 * std::uint64_t{x.values.size()};
}

std::uint64_t wire_size(const fetch_msg&) {
  return 4 + 4 + 8 * 3;
}

std::uint64_t wire_size(const params_msg& x) {
  return 4 + 8 * 2 + 8 + 4 * std::uint64_t{x.values.size()};
}

std::string to_string(const score_msg& x) {
  return stringify(x);
}

std::string to_string(const lead_msg& x) {
  return stringify(x);
}

std::string to_string(const pull_msg& x) {
  return stringify(x);
}

std::uint64_t wire_size(const pull_msg& x) {
  return 8 + 1 + 4 + 8 + 8 + 4 * std::uint64_t{x.values.size()};
}

caf::error inspect(caf::serializer& f, handle_table& x) {
  auto count = static_cast<std::uint64_t>(x.size());
  if (auto err = f(count))
    return err;
  for (std::uint64_t i = 0; i < count; ++i) {
    auto h = (*x.handles)[i];
    if (auto err = f(h))
      return err;
  }
  return caf::none;
}

caf::error inspect(caf::deserializer& f, handle_table& x) {
  std::uint64_t count = 0;
  if (auto err = f(count))
    return err;
  if (count > handle_table::max_size)
    return caf::make_error(caf::sec::invalid_argument,
                           "handle table above handle_table::max_size", count);
  auto table = std::make_shared<std::vector<caf::actor>>();
  for (std::uint64_t i = 0; i < count; ++i) {
    caf::actor h;
    if (auto err = f(h))
      return err;
    table->push_back(std::move(h));
  }
  x.handles = count > 0 ? std::move(table) : nullptr;
  return caf::none;
}

std::string to_string(const handle_table& x) {
  return std::to_string(x.size()) + " handles";
}

std::string to_string(const peer_list_msg& x) {
  if (x.all.size() > 0)
    return "peer_list_msg(all " + std::to_string(x.all.size()) + " workers)";
  std::string out
      = "peer_list_msg(" + std::to_string(x.ranks.size()) + " ranks:";
  for (std::size_t i = 0; i < x.ranks.size() && i < 8; ++i)
    out += " " + std::to_string(x.ranks[i]);
  return out + (x.ranks.size() > 8 ? " ...)" : ")");
}

std::string to_string(const gossip_msg& x) {
  return stringify(x);
}

std::string to_string(const group_msg& x) {
  return stringify(x);
}

std::string to_string(const dual_msg& x) {
  return stringify(x);
}

std::string to_string(const delta_msg& x) {
  return stringify(x);
}

std::string to_string(const shadow_msg& x) {
  return stringify(x);
}

std::uint64_t wire_size(const gossip_msg& x) {
  return 4 + 8 + 8 + 8 + 4 * std::uint64_t{x.values.size()};
}

std::uint64_t wire_size(const group_msg& x) {
  return 4 + 8 + 8 + 4 * std::uint64_t{x.values.size()};
}

std::uint64_t wire_size(const dual_msg& x) {
  return 4 + 8 + 8 + 4 * std::uint64_t{x.values.size()};
}

std::uint64_t wire_size(const delta_msg& x) {
  return 8 + 8 + 4 * std::uint64_t{x.values.size()};
}

std::uint64_t wire_size(const shadow_msg& x) {
  return 4 + 8 + 4 + 8 + 4 * std::uint64_t{x.sum.size()};
}

std::string to_string(const compressed_push_msg& x) {
  return "compressed_push_msg(" + std::to_string(x.worker) + ", "
         + std::to_string(x.seq) + ", " + std::to_string(x.version) + ", "
         + std::to_string(x.offset) + ", " + std::to_string(x.clock) + ", "
         + std::to_string(x.samples) + ", " + std::to_string(x.size) + ", "
         + std::to_string(x.packed.size()) + " bytes)";
}

std::string to_string(const compressed_gossip_msg& x) {
  return "compressed_gossip_msg(" + std::to_string(x.sender) + ", "
         + std::to_string(x.iteration) + ", " + std::to_string(x.weight) + ", "
         + std::to_string(x.fraction) + ", " + std::to_string(x.size) + ", "
         + std::to_string(x.packed.size()) + " bytes)";
}

std::uint64_t wire_size(const compressed_gossip_msg& x) {
  return 4 + 8 + 8 + 8 + 8 + 8 + std::uint64_t{x.packed.size()};
}

std::string to_string(const mirror_msg& x) {
  return "mirror_msg(" + std::to_string(x.group) + ", " + std::to_string(x.seq)
         + ", " + std::to_string(x.clock) + ", " + std::to_string(x.size) + ", "
         + std::to_string(x.packed.size()) + " bytes)";
}

std::uint64_t wire_size(const mirror_msg& x) {
  return 4 + 8 + 8 + 8 + 8 + std::uint64_t{x.packed.size()};
}

std::uint64_t wire_size(const compressed_push_msg& x) {
  return 4 + 8 * 4 + 4 + 8 + 8 + std::uint64_t{x.packed.size()};
}

} // namespace troupe::messages

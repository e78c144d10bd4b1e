#include "sim/link_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace troupe::sim {

void validate(const network_options& o) {
  auto positive = [](double x) { return std::isfinite(x) && x > 0; };
  if (!positive(o.gbps) || o.gbps > 1e5)
    throw std::invalid_argument("--link-gbps must be in (0, 100000], not "
                                + std::to_string(o.gbps));
  if (!std::isfinite(o.latency_us) || o.latency_us < 0 || o.latency_us > 1e7)
    throw std::invalid_argument("--latency-us must be in [0, 1e7], not "
                                + std::to_string(o.latency_us));
  if (!std::isfinite(o.oversubscription) || o.oversubscription < 1
      || o.oversubscription > 1e4)
    throw std::invalid_argument("--oversubscription must be in [1, 10000], "
                                "not "
                                + std::to_string(o.oversubscription));
}

nanos link_model::wire_time(std::uint64_t bytes, double gbps) noexcept {
  // bits / (gbps * 1e9) seconds = bytes * 8 / gbps nanoseconds.
  return static_cast<nanos>(std::ceil(static_cast<double>(bytes) * 8.0 / gbps));
}

link_model::link_model(network_options o, std::uint32_t nodes)
    : opts_(o), nodes_(nodes) {
  validate(opts_);
  tx_.assign(nodes, queue{0, opts_.gbps});
  rx_.assign(nodes, queue{0, opts_.gbps});
  auto racks = nodes == 0 ? 0 : rack_of(nodes - 1) + 1;
  auto per_rack = opts_.rack_size == 0 ? nodes : opts_.rack_size;
  auto uplink = opts_.gbps * per_rack / opts_.oversubscription;
  up_.assign(racks, queue{0, uplink});
  down_.assign(racks, queue{0, uplink});
  hop_ = static_cast<nanos>(std::llround(opts_.latency_us * 1000.0));
}

nanos link_model::deliver(nanos t, std::uint32_t src, std::uint32_t dst,
                          std::uint64_t bytes) {
  if (src == dst || src >= nodes_ || dst >= nodes_)
    return t;
  auto size = bytes + opts_.header_bytes;
  bytes_ += size;
  queue* path[4];
  std::size_t hops = 0;
  path[hops++] = &tx_[src];
  auto rs = rack_of(src), rd = rack_of(dst);
  if (rs != rd) {
    path[hops++] = &up_[rs];
    path[hops++] = &down_[rd];
    core_bytes_ += size;
  }
  path[hops++] = &rx_[dst];
  nanos start = t, end = t, waited = 0;
  for (std::size_t i = 0; i < hops; ++i) {
    auto& q = *path[i];
    auto s = std::max(start, q.free_at);
    waited += s - start;
    // Busy while it sends this message at its own rate; the message is
    // through once the slowest queue before it is.
    auto busy = s + wire_time(size, q.gbps);
    auto e = std::max(busy, end);
    q.free_at = busy;
    start = s;
    end = e;
  }
  max_queueing_ = std::max(max_queueing_, waited);
  // One switch in a rack; leaf, core and leaf across racks.
  return end + hop_ * (rs != rd ? 3 : 1);
}

} // namespace troupe::sim

#include "optim/range_table.hpp"

#include <stdexcept>

namespace troupe::optim {

const char* to_string(range_kind kind) noexcept {
  switch (kind) {
  case range_kind::weight:
    return "weight";
  case range_kind::bias:
    return "bias";
  case range_kind::buffer:
    return "buffer";
  }
  return "?";
}

std::size_t range_table::add(std::string name, std::size_t size,
                             range_kind kind) {
  if (find(name))
    throw std::invalid_argument("range_table: duplicate range name '" + name
                                + "'");
  const std::size_t offset = total_;
  ranges_.push_back(named_range{std::move(name), offset, size, kind});
  total_ += size;
  return offset;
}

std::optional<named_range> range_table::find(std::string_view name) const {
  for (const auto& r : ranges_)
    if (r.name == name)
      return r;
  return std::nullopt;
}

std::vector<slice> balanced_split(std::size_t total, std::size_t k) {
  if (k == 0 || k > total)
    throw std::invalid_argument("cannot split " + std::to_string(total)
                                + " parameters into " + std::to_string(k)
                                + " shards");
  const std::size_t base = total / k;
  const std::size_t extra = total % k; // the first `extra` slices get one more
  std::vector<slice> result;
  result.reserve(k);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t size = base + (i < extra ? 1 : 0);
    result.push_back(slice{offset, size});
    offset += size;
  }
  return result;
}

std::vector<slice> range_table::balanced_split(std::size_t k) const {
  return optim::balanced_split(total_, k);
}

} // namespace troupe::optim

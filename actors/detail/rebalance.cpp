#include "actors/detail/rebalance.hpp"

#include <iterator>

namespace troupe::actors::detail {

std::uint64_t steps_to_cede(std::uint64_t remaining, std::uint32_t num,
                            std::uint32_t den) noexcept {
  if (den == 0 || num >= den || remaining < 2)
    return 0;
  // remaining * num may overflow: split it.
  auto share = remaining / den * num + remaining % den * num / den;
  return share < remaining ? share : remaining - 1;
}

std::vector<std::uint64_t> split_steps(std::uint64_t total, std::size_t parts) {
  std::vector<std::uint64_t> out;
  for (std::size_t k = 0; k < parts; ++k)
    out.push_back(total / parts + (k < total % parts ? 1 : 0));
  return out;
}

std::vector<std::vector<std::uint64_t>>
split_examples(const std::vector<std::uint64_t>& examples, std::size_t parts) {
  std::vector<std::vector<std::uint64_t>> out;
  auto n = examples.size();
  for (std::size_t k = 0; k < parts; ++k) {
    auto first = n * k / parts, last = n * (k + 1) / parts;
    out.emplace_back(
        std::next(examples.begin(), static_cast<std::ptrdiff_t>(first)),
        std::next(examples.begin(), static_cast<std::ptrdiff_t>(last)));
  }
  return out;
}

} // namespace troupe::actors::detail

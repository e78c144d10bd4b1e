#include "optim/gaia.hpp"

#include <cmath>
#include <cstring>

#include "optim/dataset.hpp"

namespace troupe::optim {

std::size_t take_significant(const float* w, float* base, std::size_t n,
                             double threshold, std::string& packed) {
  std::size_t taken = 0;
  auto t = static_cast<float>(threshold);
  for (std::size_t j = 0; j < n; ++j) {
    float change = w[j] - base[j];
    if (change == 0.0f || !(std::fabs(change) > t * std::fabs(w[j])))
      continue;
    auto index = static_cast<std::uint32_t>(j);
    char entry[significant_entry_bytes];
    std::memcpy(entry, &index, 4);
    std::memcpy(entry + 4, &change, 4);
    packed.append(entry, significant_entry_bytes);
    base[j] = w[j];
    ++taken;
  }
  return taken;
}

std::size_t significant_entries(const std::string& packed) {
  if (packed.size() % significant_entry_bytes != 0)
    throw data_error("a block of significant updates of "
                     + std::to_string(packed.size())
                     + " bytes: not a whole number of 8-byte entries");
  return packed.size() / significant_entry_bytes;
}

void apply_significant(const std::string& packed, float* w, float* base,
                       std::size_t n) {
  auto count = significant_entries(packed);
  const char* p = packed.data();
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t index = 0;
    float change = 0;
    std::memcpy(&index, p + i * significant_entry_bytes, 4);
    std::memcpy(&change, p + i * significant_entry_bytes + 4, 4);
    if (index >= n)
      throw data_error("a significant update of index " + std::to_string(index)
                       + ": the model has " + std::to_string(n) + " values");
    if (!std::isfinite(change))
      throw data_error("a significant update of index " + std::to_string(index)
                       + " is not finite");
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t index = 0;
    float change = 0;
    std::memcpy(&index, p + i * significant_entry_bytes, 4);
    std::memcpy(&change, p + i * significant_entry_bytes + 4, 4);
    w[index] += change;
    base[index] += change;
  }
}

double significance_at(double threshold, double lr, double lr0) noexcept {
  if (!(lr > 0) || !(lr0 > 0))
    return threshold;
  return threshold * lr / lr0;
}

} // namespace troupe::optim

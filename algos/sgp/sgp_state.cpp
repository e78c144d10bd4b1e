#include "algos/sgp/sgp_state.hpp"

namespace troupe::algos {

void save_copies(optim::state_writer& w, const std::string& prefix,
                 const std::map<std::uint32_t, std::vector<float>>& copies) {
  std::vector<std::uint64_t> keys;
  std::vector<float> values;
  for (const auto& [j, c] : copies) {
    keys.push_back(j);
    values.insert(values.end(), c.begin(), c.end());
  }
  w.put(prefix + "peers", keys);
  w.put(prefix + "values", values);
}

void load_copies(const optim::state_reader& r, const std::string& prefix,
                 std::map<std::uint32_t, std::vector<float>>& copies,
                 std::size_t n) {
  auto keys = r.u64(prefix + "peers");
  auto values = r.f32(prefix + "values");
  if (values.size() != keys.size() * n)
    throw r.error(prefix + "values",
                  "not one model of " + std::to_string(n) + " values per peer");
  copies.clear();
  for (std::size_t i = 0; i < keys.size(); ++i)
    copies[static_cast<std::uint32_t>(keys[i])].assign(
        values.begin() + static_cast<std::ptrdiff_t>(i * n),
        values.begin() + static_cast<std::ptrdiff_t>((i + 1) * n));
}

std::vector<float>&
copy_of(std::map<std::uint32_t, std::vector<float>>& copies, std::uint32_t j,
        std::size_t n, const std::shared_ptr<const std::vector<float>>& init) {
  auto it = copies.find(j);
  if (it != copies.end())
    return it->second;
  auto& c = copies[j];
  if (init && init->size() == n)
    c = *init;
  else
    c.assign(n, 0.0f);
  return c;
}

} // namespace troupe::algos

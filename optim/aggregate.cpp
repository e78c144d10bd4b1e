#include "optim/aggregate.hpp"

#include <functional>
#include <stdexcept>
#include <utility>

#include "optim/quote.hpp"

namespace troupe::optim {

aggregation_rule::~aggregation_rule() = default;

void weighted_mean::combine(const contribution* xs, std::size_t count,
                            std::size_t n, float* out) const {
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < count; ++k)
    total += xs[k].samples;
  for (std::size_t i = 0; i < n; ++i)
    out[i] = 0.0f;
  for (std::size_t k = 0; k < count; ++k) {
    auto weight = static_cast<float>(static_cast<double>(xs[k].samples)
                                     / static_cast<double>(total));
    const float* x = xs[k].values;
    for (std::size_t i = 0; i < n; ++i)
      out[i] += weight * x[i];
  }
}

std::string weighted_mean::name() const {
  return "mean";
}

namespace {

using factory = std::function<std::unique_ptr<aggregation_rule>()>;

/// Every rule: its name and how to make it. A new rule is one line here.
const std::vector<std::pair<std::string, factory>>& registry() {
  static const std::vector<std::pair<std::string, factory>> rules{
      {"mean", [] { return std::make_unique<weighted_mean>(); }},
  };
  return rules;
}

} // namespace

std::unique_ptr<aggregation_rule>
make_aggregation_rule(const std::string& name) {
  for (const auto& [key, make] : registry())
    if (key == name)
      return make();
  std::string valid;
  for (const auto& [key, make] : registry())
    valid += (valid.empty() ? "" : ", ") + key;
  throw std::invalid_argument("unknown aggregation rule " + quote(name)
                              + " (known: " + valid + ")");
}

std::vector<std::string> aggregation_rule_names() {
  std::vector<std::string> out;
  for (const auto& [key, make] : registry())
    out.push_back(key);
  return out;
}

} // namespace troupe::optim

#include "optim/aggregate.hpp"

#include <cmath>
#include <functional>
#include <stdexcept>
#include <utility>

#include "optim/quote.hpp"
#include "optim/robust.hpp"

namespace troupe::optim {

aggregation_rule::~aggregation_rule() = default;

void validate(const rule_options& o) {
  if (o.f > 1000000)
    throw std::invalid_argument("--agg-f must be at most 1000000");
  if (o.m > 1000000)
    throw std::invalid_argument("--agg-m must be at most 1000000");
  if (!(std::isfinite(o.clip_radius) && o.clip_radius > 0))
    throw std::invalid_argument("--agg-clip-radius must be a positive number");
  if (o.clip_iterations < 1 || o.clip_iterations > 100)
    throw std::invalid_argument("--agg-clip-iterations must be in [1, 100]");
  if (o.geomed_iterations < 1 || o.geomed_iterations > 10000)
    throw std::invalid_argument("geometric median iterations must be in "
                                "[1, 10000]");
  if (!(o.geomed_tolerance > 0 && o.geomed_nu > 0))
    throw std::invalid_argument("geometric median tolerance and nu must be "
                                "positive");
}

void aggregation_rule::save(state_writer&, const std::string&) const {}

void aggregation_rule::load(const state_reader&, const std::string&) {}

void weighted_mean::combine(const contribution* xs, std::size_t count,
                            std::size_t n, float* out) {
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

using factory
    = std::function<std::unique_ptr<aggregation_rule>(const rule_options&)>;

template <class Rule>
factory robust() {
  return [](const rule_options& o) { return std::make_unique<Rule>(o); };
}

/// Every rule: its name and how to make it. A new rule is one line here.
const std::vector<std::pair<std::string, factory>>& registry() {
  static const std::vector<std::pair<std::string, factory>> rules{
      {"mean",
       [](const rule_options&) { return std::make_unique<weighted_mean>(); }},
      {"median", robust<coordinate_median>()},
      {"trimmed_mean", robust<trimmed_mean>()},
      {"krum",
       [](const rule_options& o) { return std::make_unique<krum>(o, false); }},
      {"multi_krum",
       [](const rule_options& o) { return std::make_unique<krum>(o, true); }},
      {"geomed", robust<geometric_median>()},
      {"cclip", robust<centered_clipping>()},
      {"cge", robust<comparative_elimination>()},
      {"licm", robust<lipschitz_median>()},
  };
  return rules;
}

} // namespace

std::unique_ptr<aggregation_rule> make_aggregation_rule(const std::string& name,
                                                        const rule_options& o) {
  validate(o);
  for (const auto& [key, make] : registry())
    if (key == name)
      return make(o);
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

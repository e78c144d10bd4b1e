// How a synchronous shard combines the pushes of one round (one clock) into
// the gradient it applies: a pluggable rule, looked up by name. Today's rule
// is the sample-weighted mean; robust rules (median, trimmed mean, Krum:
// issue [15]) are one file each plus one line in aggregate.cpp's table.
// No CAF.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe::optim {

/// One worker's part of a synchronous round.
struct contribution {
  std::uint32_t worker = 0;      ///< the pushing worker
  std::uint32_t samples = 0;     ///< examples its gradient is the mean over
  const float* values = nullptr; ///< its gradient for the shard's range
};

/// A rule that combines the contributions of one round into one gradient.
class aggregation_rule {
public:
  virtual ~aggregation_rule();

  /// Writes the combination of `xs[0..count)` (in worker order, each with
  /// samples > 0 and `n` values; count >= 1) to `out[0..n)`.
  virtual void combine(const contribution* xs, std::size_t count, std::size_t n,
                       float* out) const = 0;

  /// The rule's name in the registry ("mean").
  virtual std::string name() const = 0;
};

/// The sample-weighted mean: out = sum_i w_i x_i in the given order, w_i =
/// samples_i / total samples computed in double and rounded to float, the
/// sum accumulated in float from 0 (the shard's arithmetic before rules
/// were pluggable, bit for bit).
class weighted_mean final : public aggregation_rule {
public:
  void combine(const contribution* xs, std::size_t count, std::size_t n,
               float* out) const override;

  std::string name() const override;
};

/// Makes the rule registered as `name`; throws std::invalid_argument naming
/// it and listing the valid names.
std::unique_ptr<aggregation_rule>
make_aggregation_rule(const std::string& name);

/// The registered names, in registry order.
std::vector<std::string> aggregation_rule_names();

} // namespace troupe::optim

// How a synchronous shard combines the pushes of one round (one clock) into
// the gradient it applies: a pluggable rule, looked up by name: the
// sample-weighted mean, and the Byzantine-robust rules of optim/robust.hpp
// (issue [15]); a new rule is a class plus one line in aggregate.cpp's
// table.
// No CAF.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe::optim {

class state_writer;
class state_reader;

/// One worker's part of a synchronous round.
struct contribution {
  std::uint32_t worker = 0;      ///< the pushing worker
  std::uint32_t samples = 0;     ///< examples its gradient is the mean over
  const float* values = nullptr; ///< its gradient for the shard's range
};

/// The rules' settings (`--agg-*` flags).
struct rule_options {
  /// Byzantine contributions the rule must tolerate (Krum, multi-Krum,
  /// trimmed mean, CGE). Rules that need none (median, geomed, cclip, licm)
  /// ignore it.
  std::uint32_t f = 0;
  /// Multi-Krum: how many lowest-score contributions are averaged (0: n - f).
  std::uint32_t m = 0;
  /// Centered clipping: the radius tau and the iterations per round.
  double clip_radius = 1.0;
  std::uint32_t clip_iterations = 3;
  /// Geometric median: Weiszfeld iterations at most, the relative change
  /// that ends them, and the smoothing nu (distances below it count as nu).
  std::uint32_t geomed_iterations = 100;
  double geomed_tolerance = 1e-7;
  double geomed_nu = 1e-6;
};

/// Throws std::invalid_argument naming the setting out of range.
void validate(const rule_options& o);

/// A rule that combines the contributions of one round into one gradient.
/// A rule may keep state across rounds (centered clipping's center, LICM's
/// last gradients): one instance per shard.
class aggregation_rule {
public:
  virtual ~aggregation_rule();

  /// Writes the combination of `xs[0..count)` (in worker order, each with
  /// samples > 0 and `n` values; count >= 1) to `out[0..n)`.
  virtual void combine(const contribution* xs, std::size_t count, std::size_t n,
                       float* out)
      = 0;

  /// The rule's name in the registry ("mean").
  virtual std::string name() const = 0;

  /// The workers whose contributions the last combine() left out entirely
  /// (selection rules and non-finite values; a coordinate-wise rule drops
  /// values, not workers, and reports none of those).
  virtual std::vector<std::uint32_t> discarded() const {
    return {};
  }

  /// The rule's state across rounds, in a checkpoint under `prefix`
  /// (centered clipping's center, LICM's last gradients); none by default.
  /// load() leaves a fresh state where the checkpoint has none (written
  /// before the rules kept it).
  virtual void save(state_writer& w, const std::string& prefix) const;
  virtual void load(const state_reader& r, const std::string& prefix);
};

/// The sample-weighted mean: out = sum_i w_i x_i in the given order, w_i =
/// samples_i / total samples computed in double and rounded to float, the
/// sum accumulated in float from 0 (the shard's arithmetic before rules
/// were pluggable, bit for bit).
class weighted_mean final : public aggregation_rule {
public:
  void combine(const contribution* xs, std::size_t count, std::size_t n,
               float* out) override;

  std::string name() const override;
};

/// Makes the rule registered as `name` with settings `o`; throws
/// std::invalid_argument naming it and listing the valid names.
std::unique_ptr<aggregation_rule>
make_aggregation_rule(const std::string& name, const rule_options& o = {});

/// The registered names, in registry order.
std::vector<std::string> aggregation_rule_names();

} // namespace troupe::optim

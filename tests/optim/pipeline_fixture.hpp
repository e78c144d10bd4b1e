#pragma once

// What the pipeline tests share: random batches of 28x28 images, a model's
// stages with the whole model's weights, micro-batches, and one step.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/model_spec.hpp"
#include "optim/pipeline.hpp"
#include "optim/pipeline_stage.hpp"
#include "optim/rng.hpp"

namespace troupe::test::pipeline {

using namespace troupe::optim;

inline constexpr std::uint64_t seed = 20261127;
inline const shape image{1, 28, 28};

struct batch {
  matrix<double> x;
  std::vector<std::int32_t> y;
};

inline batch random_batch(int n, rng& gen) {
  batch b;
  b.x.resize(static_cast<Eigen::Index>(image.size()), n);
  for (Eigen::Index i = 0; i < b.x.size(); ++i)
    b.x.data()[i] = gen.uniform();
  for (int i = 0; i < n; ++i)
    b.y.push_back(static_cast<std::int32_t>(gen.below(10)));
  return b;
}

// The stages of `plan`, their weights copied from `whole`.
inline std::vector<pipeline_stage<double>>
make_stages(const std::string& model, const std::vector<stage_plan>& plan,
            const sequential<double>& whole, bool stash) {
  std::vector<pipeline_stage<double>> out;
  for (const auto& p : plan) {
    auto m = build_stage<double>(model, image, 10, p.first, p.last);
    REQUIRE(m.param_offset() == p.param_offset);
    REQUIRE(m.size() == p.param_size);
    std::copy_n(whole.params() + p.param_offset, p.param_size, m.params());
    out.emplace_back(std::move(m), stash, seed);
  }
  return out;
}

// The micro-batches of `b`: columns [i * n / m, (i + 1) * n / m).
inline std::vector<batch> split(const batch& b, std::size_t m) {
  std::vector<batch> out;
  const auto n = static_cast<std::size_t>(b.x.cols());
  for (std::size_t i = 0; i < m; ++i) {
    const auto lo = i * n / m;
    const auto hi = (i + 1) * n / m;
    batch part;
    part.x = b.x.middleCols(static_cast<Eigen::Index>(lo),
                            static_cast<Eigen::Index>(hi - lo));
    part.y.assign(b.y.begin() + lo, b.y.begin() + hi);
    out.push_back(std::move(part));
  }
  return out;
}

// Runs a step of `parts` through `stages`, scaled by each part's share of
// `total` samples; no update.
inline std::vector<double> run_step(std::vector<pipeline_stage<double>>& stages,
                                    pipeline_schedule sched,
                                    const std::vector<batch>& parts,
                                    std::size_t total) {
  pipeline_feed<double> feed;
  feed.input
      = [&](std::size_t m) -> const matrix<double>& { return parts[m].x; };
  feed.targets = [&](std::size_t m) {
    return batch_targets{parts[m].y.data(), nullptr};
  };
  feed.scale = [&](std::size_t m) {
    return static_cast<double>(parts[m].x.cols()) / total;
  };
  feed.update = [](std::size_t) {};
  return run_pipeline(stages, sched, parts.size(), feed);
}

} // namespace troupe::test::pipeline

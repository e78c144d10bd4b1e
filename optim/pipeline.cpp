#include "optim/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "optim/model_spec.hpp"
#include "optim/rng.hpp"

namespace troupe::optim {

namespace {

// Seconds of the best of a few forward and backward passes of `stage` on
// random inputs of `batch` samples.
double time_layer(sequential<float>& stage, std::size_t batch) {
  using clock = std::chrono::steady_clock;
  rng gen{0x5eed};
  const auto n = static_cast<Eigen::Index>(batch);
  matrix<float> x(static_cast<Eigen::Index>(stage.input_shape().size()), n);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    x.data()[i] = static_cast<float>(gen.uniform(0, 1));
  std::vector<std::int32_t> labels(batch, 0);
  std::vector<float> values(batch, 0.f);
  matrix<float> dout;
  matrix<float> din;
  double best = std::numeric_limits<double>::infinity();
  for (int pass = 0; pass < 4; ++pass) {
    const auto start = clock::now();
    if (stage.ends_model()) {
      stage.loss_and_gradient(x, batch_targets{labels.data(), values.data()},
                              &din, 1.f);
    } else {
      const auto& out = stage.forward_training(x);
      dout.setConstant(out.rows(), out.cols(), 1.f / n);
      stage.backward(x, dout, &din);
    }
    const double secs
        = std::chrono::duration<double>(clock::now() - start).count();
    if (pass > 0) // the first pass allocates
      best = std::min(best, secs);
    if (secs > 0.25)
      break;
  }
  return best == std::numeric_limits<double>::infinity() ? 0 : best / n;
}

stage_plan make_stage(const std::vector<layer_profile>& layers,
                      std::size_t first, std::size_t last) {
  stage_plan p;
  p.first = first;
  p.last = last;
  p.param_offset = layers[first].offset;
  p.in_values = layers[first].in_values;
  for (auto i = first; i < last; ++i) {
    p.param_size += layers[i].params;
    p.cost += layers[i].cost;
  }
  return p;
}

void check_fits(const std::vector<layer_profile>& layers,
                const std::vector<stage_plan>& plan, std::size_t max_params) {
  if (max_params == 0)
    return;
  for (std::size_t s = 0; s < plan.size(); ++s)
    if (plan[s].param_size > max_params)
      throw std::invalid_argument(
          "stage " + std::to_string(s) + " (" + layers[plan[s].first].name
          + ".." + layers[plan[s].last - 1].name + ") would hold "
          + std::to_string(plan[s].param_size) + " parameters, more than "
          + std::to_string(max_params) + " per actor");
}

} // namespace

std::vector<layer_profile> profile_layers(const std::string& model, shape input,
                                          int classes, std::size_t batch) {
  // The layer count comes from a stage of the first layer's own build.
  std::vector<layer_profile> out;
  for (std::size_t i = 0;; ++i) {
    auto stage = build_stage<float>(model, input, classes, i, i + 1);
    layer_profile p;
    p.name = stage.names().front();
    p.offset = stage.param_offset();
    p.params = stage.size();
    p.in_values = stage.input_shape().size();
    p.out_values = stage.output_shape().size();
    // A dense or conv layer multiplies each weight once per output position
    // (outputs / biases of them); element-wise layers touch each value.
    double weights = 0;
    double biases = 0;
    for (const auto& r : stage.ranges().ranges())
      (r.kind == range_kind::bias ? biases : weights)
          += static_cast<double>(r.size);
    p.flops = (biases > 0 ? weights * static_cast<double>(p.out_values) / biases
                          : weights)
              + static_cast<double>(p.in_values + p.out_values);
    if (batch > 0)
      p.cost = time_layer(stage, batch);
    out.push_back(std::move(p));
    if (stage.ends_model())
      return out;
  }
}

std::vector<stage_plan> cut_balanced(const std::vector<layer_profile>& layers,
                                     std::size_t stages,
                                     std::size_t max_params) {
  const std::size_t n = layers.size();
  if (stages == 0 || stages > n)
    throw std::invalid_argument("cannot cut a model of " + std::to_string(n)
                                + " layers into " + std::to_string(stages)
                                + " stages (at least one layer each)");
  for (const auto& l : layers)
    if (max_params > 0 && l.params > max_params)
      throw std::invalid_argument("layer " + l.name + " alone has "
                                  + std::to_string(l.params)
                                  + " parameters, more than "
                                  + std::to_string(max_params) + " per actor");
  // Costs: measured, or (none measured) estimated.
  const bool measured = std::any_of(layers.begin(), layers.end(),
                                    [](const auto& l) { return l.cost > 0; });
  std::vector<double> prefix(n + 1, 0);
  std::vector<std::size_t> pprefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const double c = measured ? layers[i].cost : layers[i].flops;
    prefix[i + 1] = prefix[i] + c;
    pprefix[i + 1] = pprefix[i] + layers[i].params;
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[s][j]: the least largest cost of cutting layers [0, j) into s
  // stages; from[s][j]: where the last of them starts.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> from(
      stages + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t s = 1; s <= stages; ++s)
    for (std::size_t j = s; j <= n; ++j)
      for (std::size_t i = s - 1; i < j; ++i) {
        if (best[s - 1][i] == inf)
          continue;
        if (max_params > 0 && pprefix[j] - pprefix[i] > max_params)
          continue;
        const double c = std::max(best[s - 1][i], prefix[j] - prefix[i]);
        if (c < best[s][j]) {
          best[s][j] = c;
          from[s][j] = i;
        }
      }
  if (best[stages][n] == inf)
    throw std::invalid_argument("no cut into " + std::to_string(stages)
                                + " stages keeps every stage within "
                                + std::to_string(max_params)
                                + " parameters; use more stages");
  std::vector<stage_plan> plan(stages);
  std::size_t j = n;
  for (std::size_t s = stages; s > 0; --s) {
    const auto i = from[s][j];
    plan[s - 1] = make_stage(layers, i, j);
    j = i;
  }
  return plan;
}

std::vector<stage_plan> cut_at(const std::vector<layer_profile>& layers,
                               const std::vector<std::string>& starts,
                               std::size_t max_params) {
  std::vector<std::size_t> cuts{0};
  for (const auto& name : starts) {
    auto it = std::find_if(layers.begin(), layers.end(),
                           [&](const auto& l) { return l.name == name; });
    if (it == layers.end()) {
      std::string known;
      for (const auto& l : layers)
        known += (known.empty() ? "" : ", ") + l.name;
      throw std::invalid_argument("no layer named \"" + name
                                  + "\" to cut before; the layers are "
                                  + known);
    }
    const auto at = static_cast<std::size_t>(it - layers.begin());
    if (at == 0)
      throw std::invalid_argument("cannot cut before the first layer, \"" + name
                                  + "\"");
    if (at <= cuts.back())
      throw std::invalid_argument("cut points must follow the model's order "
                                  "without repeats; \""
                                  + name + "\" does not");
    cuts.push_back(at);
  }
  cuts.push_back(layers.size());
  std::vector<stage_plan> plan;
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s)
    plan.push_back(make_stage(layers, cuts[s], cuts[s + 1]));
  check_fits(layers, plan, max_params);
  return plan;
}

std::string describe_cut(const std::vector<layer_profile>& layers,
                         const std::vector<stage_plan>& plan) {
  std::string out;
  for (const auto& p : plan) {
    if (!out.empty())
      out += " | ";
    out += layers[p.first].name;
    if (p.last - p.first > 1)
      out += ".." + layers[p.last - 1].name;
  }
  return out;
}

} // namespace troupe::optim

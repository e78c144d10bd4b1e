#include "apps/simulate_compute.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "optim/optimizer.hpp"
#include "optim/pipeline.hpp"
#include "optim/quote.hpp"

namespace troupe::apps {

namespace {

/// The largest --virtual-params: 4 TB a copy of the model.
constexpr std::uint64_t max_virtual = 1'000'000'000'000ULL;

/// Seconds per value of the shards' optimizer updating the whole model,
/// here.
double calibrate_update(const actors::job_config& job) {
  auto n = job.init ? job.init->size() : 0;
  if (n == 0)
    return 0;
  std::vector<float> params(*job.init), grads(n, 1e-3f);
  auto opt = optim::make_optimizer<float>(job.server.optimizer, n);
  opt->step(params.data(), grads.data(), n, 1e-3);
  int steps = 0;
  auto t0 = std::chrono::steady_clock::now();
  do {
    opt->step(params.data(), grads.data(), n, 1e-3);
    ++steps;
  } while (steps < 5
           || std::chrono::steady_clock::now() - t0
                  < std::chrono::milliseconds{300});
  auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
               .count();
  return s / (static_cast<double>(steps) * static_cast<double>(n));
}

/// Seconds per sample of a real step of worker 0's replica, here.
double calibrate(const actors::job_config& job) {
  auto r = job.make_replica(0);
  for (int i = 0; i < 2; ++i)
    r->compute();
  std::uint64_t samples = 0;
  auto t0 = std::chrono::steady_clock::now();
  int steps = 0;
  do {
    samples += r->compute().samples;
    ++steps;
  } while (steps < 5
           || std::chrono::steady_clock::now() - t0 < std::chrono::seconds{1});
  auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
               .count();
  return samples > 0 ? s / static_cast<double>(samples) : 0;
}

/// Seconds of a real evaluation of the job's initial model on its test
/// set, here (the second of two: the first warms up), 0 without one.
double calibrate_eval(const actors::job_config& job) {
  if (!job.evaluate || !job.init || job.init->empty())
    return 0;
  double seconds = 0;
  for (int i = 0; i < 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    job.evaluate(job.init->data(), job.init->size());
    seconds
        = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
  }
  return seconds;
}

/// MemAvailable of /proc/meminfo in bytes (0: unknown).
double available_bytes() {
  std::ifstream in{"/proc/meminfo"};
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:")
      return kb * 1024;
  return 0;
}

/// The model's estimated work per sample and step (forward and backward).
double step_flops(const cluster_job& cj) {
  double forward = 0;
  for (const auto& l : optim::profile_layers(cj.model, cj.input, cj.classes, 0))
    forward += l.flops;
  // Two flops per multiply-add; the backward pass costs twice the forward.
  return 2 * 3 * forward;
}

} // namespace

std::uint64_t virtual_params_of(const std::string& text) {
  if (text.empty())
    return 0;
  auto bad = [&](const std::string& why) {
    return usage_error("troupe simulate: --virtual-params=" + optim::quote(text)
                       + " " + why);
  };
  const char* count = "is not a count of parameters (e.g. 1000000 or 1e9)";
  bool digits = text.find_first_not_of("0123456789") == std::string::npos;
  double d = 0;
  std::uint64_t n = 0;
  try {
    std::size_t used = 0;
    if (digits && text.size() <= 19)
      n = std::stoull(text, &used);
    else {
      d = std::stod(text, &used);
      if (!std::isfinite(d) || d != std::floor(d))
        throw bad(count);
      if (d < 1 || d > static_cast<double>(max_virtual))
        throw bad("must be in [1, 10^12] (and at least the model's "
                  "parameters)");
      n = static_cast<std::uint64_t>(d);
    }
    if (used != text.size())
      throw bad(count);
  } catch (const usage_error&) {
    throw;
  } catch (const std::exception&) {
    if (!digits)
      throw bad(count);
    n = max_virtual + 1; // too many digits
  }
  if (n < 1 || n > max_virtual)
    throw bad("must be in [1, 10^12] (and at least the model's parameters)");
  return n;
}

nlohmann::json choose_compute(sim::sim_options& so, const compute_flags& f,
                              const actors::job_config& job,
                              const cluster_job& cj) {
  auto real = static_cast<std::uint64_t>(job.init ? job.init->size() : 0);
  double scale = 1;
  if (f.virtual_params != 0) {
    if (f.virtual_params < real)
      throw usage_error(
          "troupe simulate: --virtual-params="
          + std::to_string(f.virtual_params) + " is less than the model's "
          + std::to_string(real)
          + " parameters; it must be at least that (it only makes a model "
            "bigger)");
    so.virtual_params = f.virtual_params;
    if (real > 0)
      scale = static_cast<double>(f.virtual_params) / static_cast<double>(real);
  }
  nlohmann::json out;
  std::string source = "given";
  so.compute.sample_seconds = f.sample_seconds;
  so.compute.value_seconds = f.value_seconds;
  if (f.calibrate) {
    // The real model's times here, for a model D/d times its size.
    so.compute.sample_seconds = calibrate(job) * scale;
    so.compute.value_seconds = calibrate_update(job);
    // An evaluation as it runs here (its batches' forward passes, which a
    // share of a training step's cost does not price), unless given.
    if (so.compute.eval_seconds < 0)
      if (auto e = calibrate_eval(job); e > 0)
        so.compute.eval_seconds = e * scale;
    source = "calibrated";
  } else if (so.compute.sample_seconds <= 0) {
    so.compute.sample_seconds = step_flops(cj) * scale / (f.node_gflops * 1e9);
    source = "flops";
    out["node_gflops"] = f.node_gflops;
  }
  // An optimizer's update: a few flops a value (read, update, write).
  if (so.compute.value_seconds <= 0)
    so.compute.value_seconds = 8 / (f.node_gflops * 1e9);
  // A shard updating n real values updates n × D/d virtual ones.
  so.compute.update_scale = scale;
  out["source"] = source;
  return out;
}

void check_memory(const actors::job_config& job) {
  auto params = static_cast<double>(job.init ? job.init->size() : 0);
  // A worker holds its parameters, gradients and optimizer state (about
  // four copies), the shards one more copy.
  auto need = (4.0 * job.workers + 2) * params * sizeof(float);
  auto have = available_bytes();
  if (have > 0 && need > have)
    throw usage_error(
        "troupe simulate: " + std::to_string(job.workers) + " replicas of "
        + std::to_string(static_cast<std::uint64_t>(params))
        + " parameters need about " + std::to_string(need / 1e9).substr(0, 5)
        + " GB, more than the " + std::to_string(have / 1e9).substr(0, 5)
        + " GB available here; use fewer --workers or a smaller --model");
}

} // namespace troupe::apps

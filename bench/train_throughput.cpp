// Single-thread training throughput of the built-in models, set against the
// machine's single-thread float GEMM rate. Prints one JSON object.
//
//   train_throughput [--seconds=S] [--batch=B] [--models=mlp,lenet]

#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "optim/trainer.hpp"

#ifdef TROUPE_BENCH_CBLAS
#include <cblas.h>
#endif

namespace {

using namespace troupe::optim;
using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Floating-point operations of one training sample (forward, weight
/// gradients, input gradients except for the first layer), from the
/// multiply-accumulates of each layer's forward pass.
double train_flops_per_sample(const std::string& model) {
  // forward MACs per sample; `first` = MACs of the first layer (no dX).
  double macs = 0, first = 0;
  if (model == "mlp") {
    first = 784.0 * 256;
    macs = first + 256.0 * 128 + 128.0 * 10;
  } else if (model == "lenet") {
    first = 6.0 * 1 * 25 * 28 * 28;                // conv1
    macs = first + 16.0 * 6 * 25 * 10 * 10         // conv2
           + 400.0 * 120 + 120.0 * 84 + 84.0 * 10; // fc
  } else {
    first = macs = 784.0 * 10; // logreg
  }
  return 2 * macs + 2 * macs + 2 * (macs - first);
}

/// Single-thread float GEMM rate of Eigen on n x n x n, in GFLOP/s.
double eigen_gemm_gflops(int n, double seconds) {
  matrix<float> a = matrix<float>::Random(n, n);
  matrix<float> b = matrix<float>::Random(n, n);
  matrix<float> c(n, n);
  c.noalias() = a * b; // warm-up
  std::size_t reps = 0;
  auto t0 = clock_type::now();
  do {
    c.noalias() = a * b;
    ++reps;
  } while (since(t0) < seconds);
  auto t = since(t0);
  volatile float sink = c(0, 0);
  (void)sink;
  return 2.0 * n * n * n * static_cast<double>(reps) / t / 1e9;
}

#ifdef TROUPE_BENCH_CBLAS
double blas_gemm_gflops(int n, double seconds) {
  openblas_set_num_threads(1);
  matrix<float> a = matrix<float>::Random(n, n);
  matrix<float> b = matrix<float>::Random(n, n);
  matrix<float> c(n, n);
  auto run = [&] {
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  run();
  std::size_t reps = 0;
  auto t0 = clock_type::now();
  do {
    run();
    ++reps;
  } while (since(t0) < seconds);
  return 2.0 * n * n * n * static_cast<double>(reps) / since(t0) / 1e9;
}
#endif

nlohmann::json measure(const std::string& name, const dataset& data,
                       std::size_t batch, double seconds) {
  auto model = make_model<float>(name, data.sample_shape, data.classes);
  model.init(1);
  std::vector<std::size_t> idx(data.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  optimizer_options opt;
  opt.name = "momentum";
  schedule_options sched;
  sched.base_lr = 0.01;
  local_trainer trainer{model,           data, std::move(idx), batch, opt,
                        schedule{sched}, 1};
  for (int i = 0; i < 50; ++i) // warm-up
    trainer.step();
  std::size_t samples = 0;
  auto t0 = clock_type::now();
  do {
    samples += trainer.step().samples;
  } while (since(t0) < seconds);
  auto sps = static_cast<double>(samples) / since(t0);
  auto flops = train_flops_per_sample(name);
  return {{"model", name},
          {"batch", batch},
          {"samples_per_sec", sps},
          {"train_flops_per_sample", flops},
          {"gflops", sps * flops / 1e9}};
}

} // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::size_t batch = 64;
  std::vector<std::string> models{"mlp", "lenet"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--seconds=", 0) == 0) {
      seconds = std::stod(arg.substr(10));
    } else if (arg.rfind("--batch=", 0) == 0) {
      batch = std::stoul(arg.substr(8));
    } else if (arg.rfind("--models=", 0) == 0) {
      models.clear();
      std::string list = arg.substr(9);
      for (std::size_t pos = 0; pos <= list.size();) {
        auto comma = std::min(list.find(',', pos), list.size());
        models.push_back(list.substr(pos, comma - pos));
        pos = comma + 1;
      }
    } else {
      std::cerr << "usage: train_throughput [--seconds=S] [--batch=B] "
                   "[--models=mlp,lenet]\n";
      return 2;
    }
  }
  auto data = load_mnist_dir(fashion_mnist_dir);
  nlohmann::json out;
  out["benchmark"] = "train_throughput";
  out["threads"] = 1;
  out["eigen_simd"] = Eigen::SimdInstructionSetsInUse();
  double ceiling = eigen_gemm_gflops(1024, 2.0);
  out["gemm_gflops_eigen"] = ceiling;
#ifdef TROUPE_BENCH_CBLAS
  auto blas = blas_gemm_gflops(1024, 2.0);
  out["gemm_gflops_openblas"] = blas;
  ceiling = std::max(ceiling, blas);
#endif
  out["gemm_gflops_ceiling"] = ceiling;
  for (const auto& name : models) {
    auto m = measure(name, data.train, batch, seconds);
    m["fraction_of_gemm_ceiling"] = m["gflops"].get<double>() / ceiling;
    out["models"][name] = m;
    std::cerr << name << ": " << m["samples_per_sec"].get<double>()
              << " samples/s\n";
  }
  std::cout << out.dump() << std::endl;
}

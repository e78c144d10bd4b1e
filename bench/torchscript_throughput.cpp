// Single-thread training throughput of troupe's TorchScript backend
// (--model=torchscript:FILE.pt), set against the same module trained by
// plain libtorch and against troupe's own Eigen model of the same name, all
// in one process on Fashion-MNIST. Prints one JSON object.
//
//   torchscript_throughput --mlp=FILE.pt --lenet=FILE.pt [--seconds=S]
//                          [--batch=B] [--rounds=R]
//
// bench/compare_torchscript exports the modules and adds PyTorch itself.

#include <ATen/Parallel.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <sys/resource.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "optim/model_spec.hpp"
#include "optim/trainer.hpp"

namespace {

using namespace troupe::optim;
using clock_type = std::chrono::steady_clock;

constexpr double lr = 0.01;
constexpr double momentum = 0.9;
constexpr int warmup_steps = 50;
// The goal of the issue: the backend costs at most this much per step over
// plain libtorch.
constexpr double overhead_goal = 0.10;

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// One way of training a model, stepped by the caller. Each step also adds
/// the seconds of its phases to `phase_seconds` (names in `phases`), which
/// tells where a step's time goes when two ways differ.
class contender {
public:
  virtual ~contender() = default;
  /// One training step; returns the samples it trained on and adds its
  /// loss to `loss_sum`.
  virtual std::size_t step() = 0;
  virtual std::vector<std::string> phases() const = 0;

  std::vector<double> phase_seconds;
  std::size_t samples = 0, steps = 0;
  double seconds = 0, cpu_seconds = 0, loss_sum = 0;
  long minor_faults = 0;
  std::vector<double> round_samples_per_sec;
};

/// troupe's step as `troupe train` takes it: local_trainer (batch gather,
/// forward, loss, backward; then momentum SGD on the flat vector), here on
/// a built-in model or a description.
class troupe_contender : public contender {
public:
  troupe_contender(const std::string& model, const dataset& data,
                   std::size_t batch)
      : model_(make_model<float>(model, data.sample_shape, data.classes)) {
    model_.init(1);
    std::vector<std::size_t> idx(data.size());
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    optimizer_options opt;
    opt.name = "momentum";
    opt.momentum = momentum;
    schedule_options sched;
    sched.base_lr = lr;
    trainer_ = std::make_unique<local_trainer>(model_, data, std::move(idx),
                                               batch, opt, schedule{sched}, 1);
    phase_seconds.assign(2, 0.0);
  }

  std::size_t step() override {
    auto t0 = clock_type::now();
    auto r = trainer_->compute();
    auto t1 = clock_type::now();
    trainer_->apply();
    auto t2 = clock_type::now();
    phase_seconds[0] += seconds_between(t0, t1);
    phase_seconds[1] += seconds_between(t1, t2);
    loss_sum += r.loss;
    return r.samples;
  }

  std::vector<std::string> phases() const override {
    return {"batch_forward_backward", "optimizer"};
  }

private:
  sequential<float> model_;
  std::unique_ptr<local_trainer> trainer_;
};

/// The same work without troupe: the module loaded by libtorch, a shuffled
/// batch gathered from the same images (troupe gathers one too), libtorch's
/// cross-entropy, autograd, and torch::optim::SGD with momentum.
class libtorch_contender : public contender {
public:
  libtorch_contender(const std::string& file, const dataset& data,
                     std::size_t batch)
      : module_(torch::jit::load(file, torch::kCPU)),
        batch_(static_cast<std::int64_t>(batch)),
        n_(static_cast<std::int64_t>(data.size())) {
    module_.train();
    std::vector<at::Tensor> params;
    for (const auto& p : module_.parameters())
      params.push_back(p);
    sgd_ = std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(lr).momentum(momentum));
    // The shape troupe gives the module (torchscript_module::wrap): [B, C]
    // for flat samples, else [B, C, H, W]; one column of data.x per sample.
    const auto& s = data.sample_shape;
    std::vector<std::int64_t> dims{n_, s.c};
    if (s.h * s.w > 1)
      dims = {n_, s.c, s.h, s.w};
    images_ = torch::from_blob(const_cast<float*>(data.x.data()), dims,
                               torch::kFloat);
    labels_ = torch::tensor(
        std::vector<std::int64_t>(data.labels.begin(), data.labels.end()));
    dims[0] = batch_;
    x_ = torch::empty(dims, torch::kFloat);
    y_ = torch::empty({batch_}, torch::kLong);
    torch::manual_seed(1);
    order_ = torch::randperm(n_);
    phase_seconds.assign(4, 0.0);
  }

  std::size_t step() override {
    auto t0 = clock_type::now();
    if (next_ + batch_ > n_) {
      order_ = torch::randperm(n_);
      next_ = 0;
    }
    const auto idx = order_.narrow(0, next_, batch_);
    next_ += batch_;
    torch::index_select_out(x_, images_, 0, idx);
    torch::index_select_out(y_, labels_, 0, idx);
    auto t1 = clock_type::now();
    auto out = module_.forward({x_}).toTensor();
    auto t2 = clock_type::now();
    auto loss = torch::nn::functional::cross_entropy(out, y_);
    loss.backward();
    auto t3 = clock_type::now();
    sgd_->step();
    sgd_->zero_grad();
    auto t4 = clock_type::now();
    phase_seconds[0] += seconds_between(t0, t1);
    phase_seconds[1] += seconds_between(t1, t2);
    phase_seconds[2] += seconds_between(t2, t3);
    phase_seconds[3] += seconds_between(t3, t4);
    loss_sum += loss.item<double>(); // a read: the loss is computed
    return static_cast<std::size_t>(batch_);
  }

  std::vector<std::string> phases() const override {
    return {"batch", "forward", "loss_backward", "optimizer"};
  }

private:
  torch::jit::Module module_;
  std::unique_ptr<torch::optim::SGD> sgd_;
  std::int64_t batch_, n_, next_ = 0;
  at::Tensor images_, labels_, x_, y_, order_;
};

/// Page faults of this process so far that the kernel served without I/O:
/// memory libtorch freed to the system and touches again.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

/// Runs `c` for `seconds` (whole steps) and adds to its totals.
void run_for(contender& c, double seconds) {
  const auto faults0 = minor_faults();
  const auto cpu0 = std::clock();
  const auto t0 = clock_type::now();
  auto now = t0;
  std::size_t samples = 0;
  do {
    samples += c.step();
    ++c.steps;
    now = clock_type::now();
  } while (seconds_between(t0, now) < seconds);
  c.samples += samples;
  c.seconds += seconds_between(t0, now);
  c.round_samples_per_sec.push_back(static_cast<double>(samples)
                                    / seconds_between(t0, now));
  c.cpu_seconds += static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  c.minor_faults += minor_faults() - faults0;
}

nlohmann::json report(const contender& c) {
  nlohmann::json phases;
  auto names = c.phases();
  const auto steps = static_cast<double>(c.steps);
  for (std::size_t i = 0; i < names.size(); ++i)
    phases[names[i]] = c.phase_seconds[i] / steps * 1e3;
  return {{"samples_per_sec", static_cast<double>(c.samples) / c.seconds},
          {"steps", c.steps},
          {"seconds", c.seconds},
          {"ms_per_step", c.seconds / steps * 1e3},
          // Below 1: the process waited for a core (other load).
          {"cpu_over_wall", c.cpu_seconds / c.seconds},
          {"page_faults_per_step", static_cast<double>(c.minor_faults) / steps},
          // That it trains: the three start from comparable weights and
          // take the same steps, so their mean losses come out alike.
          {"mean_loss", c.loss_sum / steps},
          {"phase_ms_per_step", phases},
          // Their spread tells the noise of the machine.
          {"round_samples_per_sec", c.round_samples_per_sec}};
}

/// The three ways on one model: warmed up, then in `rounds` turns of
/// seconds / rounds each, so that a change in the machine's load during
/// the run falls on all three alike.
nlohmann::json measure(const std::string& name, const std::string& file,
                       const dataset& data, std::size_t batch, double seconds,
                       int rounds) {
  // The backend first: building it sets libtorch's process-wide settings
  // (one thread, glibc's heap top pad: optim/detail/torchscript_module.cpp),
  // which plain libtorch then runs under too.
  std::vector<std::unique_ptr<contender>> all;
  all.push_back(std::make_unique<troupe_contender>(
      read_model_description("torchscript:" + file), data, batch));
  all.push_back(std::make_unique<libtorch_contender>(file, data, batch));
  all.push_back(std::make_unique<troupe_contender>(name, data, batch));
  for (auto& c : all) {
    for (int i = 0; i < warmup_steps; ++i)
      c->step();
    std::fill(c->phase_seconds.begin(), c->phase_seconds.end(), 0.0);
    c->loss_sum = 0;
  }
  for (int r = 0; r < rounds; ++r)
    for (auto& c : all)
      run_for(*c, seconds / rounds);
  nlohmann::json out{{"file", file},
                     {"torchscript", report(*all[0])},
                     {"libtorch", report(*all[1])},
                     {"eigen", report(*all[2])}};
  const auto sps
      = [&](const char* k) { return out[k]["samples_per_sec"].get<double>(); };
  const auto overhead = sps("libtorch") / sps("torchscript") - 1;
  out["torchscript_overhead"] = overhead;
  // Per round, the backend and libtorch ran back to back: the median of
  // their ratios passes over a round that a burst of page faults or other
  // load slowed (round_samples_per_sec shows them).
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r)
    ratios.push_back(all[1]->round_samples_per_sec[r]
                         / all[0]->round_samples_per_sec[r]
                     - 1);
  std::sort(ratios.begin(), ratios.end());
  out["torchscript_overhead_median_round"]
      = (ratios[(ratios.size() - 1) / 2] + ratios[ratios.size() / 2]) / 2;
  out["overhead_goal"] = overhead_goal;
  out["overhead_goal_met"] = overhead <= overhead_goal;
  out["eigen_vs_torchscript"] = sps("eigen") / sps("torchscript");
  out["eigen_vs_libtorch"] = sps("eigen") / sps("libtorch");
  return out;
}

/// The BLAS library libtorch's matrix products went to, as mapped into this
/// process (Debian's libtorch takes libblas.so.3, which is the slow
/// reference BLAS unless OpenBLAS provides it); "" if none is.
std::string loaded_blas() {
  std::ifstream maps{"/proc/self/maps"};
  for (std::string line; std::getline(maps, line);) {
    auto path = line.substr(std::min(line.find('/'), line.size()));
    auto base = path.substr(path.rfind('/') + 1);
    if (base.rfind("libblas", 0) == 0 || base.rfind("libopenblas", 0) == 0)
      return path;
  }
  return "";
}

int usage() {
  std::cerr << "usage: torchscript_throughput --mlp=FILE.pt --lenet=FILE.pt "
               "[--seconds=S] [--batch=B] [--rounds=R]\n";
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  // Before anything runs in parallel: libtorch refuses a new inter-op
  // thread count once its pool exists.
  torch::set_num_threads(1);
  at::set_num_interop_threads(1);
  double seconds = 5;
  std::size_t batch = 64;
  int rounds = 3;
  std::vector<std::pair<std::string, std::string>> models; // name, file
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = arg.substr(arg.find('=') + 1);
    if (arg.rfind("--mlp=", 0) == 0 || arg.rfind("--lenet=", 0) == 0)
      models.emplace_back(arg.substr(2, arg.find('=') - 2), value);
    else if (arg.rfind("--seconds=", 0) == 0)
      seconds = std::atof(value.c_str());
    else if (arg.rfind("--batch=", 0) == 0)
      batch = std::strtoul(value.c_str(), nullptr, 10);
    else if (arg.rfind("--rounds=", 0) == 0)
      rounds = std::atoi(value.c_str());
    else
      return usage();
  }
  if (models.empty() || !(seconds > 0) || batch == 0 || rounds < 1)
    return usage();
  nlohmann::json out;
  out["benchmark"] = "torchscript_throughput";
  out["torch_version"] = TORCH_VERSION;
  out["threads"] = at::get_num_threads();
  out["interop_threads"] = at::get_num_interop_threads();
  out["batch"] = batch;
  out["seconds"] = seconds;
  out["rounds"] = rounds;
  out["lr"] = lr;
  out["momentum"] = momentum;
  out["warmup_steps"] = warmup_steps;
  try {
    auto data = load_mnist_dir(fashion_mnist_dir);
    for (const auto& [name, file] : models) {
      auto m = measure(name, file, data.train, batch, seconds, rounds);
      std::cerr << name << ": torchscript "
                << m["torchscript"]["samples_per_sec"].get<double>()
                << ", libtorch "
                << m["libtorch"]["samples_per_sec"].get<double>() << ", eigen "
                << m["eigen"]["samples_per_sec"].get<double>()
                << " samples/s\n";
      out["models"][name] = m;
    }
    out["blas"] = loaded_blas();
  } catch (const std::exception& e) {
    // A missing data set or module, a module that does not fit the data.
    // libtorch's messages go on with a C++ backtrace: the first line only.
    std::string text = e.what();
    std::cerr << "torchscript_throughput: " << text.substr(0, text.find('\n'))
              << "\n";
    return 1;
  }
  std::cout << out.dump() << std::endl;
}

// (a) The user's own model trained with Downpour across worker actors.
//
// The model is the application's: a layer written here with Eigen (softsign)
// between troupe's dense layers. Two workers train it asynchronously through
// a parameter shard; a job observer prints every evaluation of the test set.
//
//   own_model [steps-per-worker] [workers]
//
// Prints the final parameters' hash and "final accuracy A"; exits 0 when A is
// above chance (0.1). With one worker the run is deterministic.

#include <cstdlib>
#include <iostream>
#include <memory>
#include <numeric>
#include <troupe/troupe.hpp>

using namespace troupe;

// [snippet:own-layer]
/// softsign(x) = x / (1 + |x|), elementwise: a layer of the application's own.
class softsign : public optim::layer<float> {
public:
  std::string kind() const override {
    return "softsign";
  }
  optim::shape setup(const optim::shape& in) override {
    return in;
  }
  void forward(const optim::matrix<float>& in,
               optim::matrix<float>& out) override {
    out = (in.array() / (1 + in.array().abs())).matrix();
  }
  void backward(const optim::matrix<float>& in, const optim::matrix<float>&,
                const optim::matrix<float>& dout,
                optim::matrix<float>* din) override {
    if (din != nullptr)
      *din = (dout.array() / (1 + in.array().abs()).square()).matrix();
  }
};

/// The model: 784 -> 64 -> softsign -> 10.
optim::sequential<float> make_model(const optim::shape& input) {
  optim::sequential<float> model{input};
  model.add<optim::flatten<float>>()
      .add<optim::dense<float>>(64)
      .add(std::make_unique<softsign>())
      .add<optim::dense<float>>(10);
  model.finalize();
  return model;
}
// [/snippet]

// [snippet:own-replica]
/// A worker's replica: its own copy of the model over its share of the data.
class own_replica : public optim::model_replica {
public:
  own_replica(std::unique_ptr<optim::sequential<float>> model,
              const optim::dataset& data, std::vector<std::size_t> indices,
              std::uint64_t seed)
      : model_replica(*model, data, std::move(indices), 32, seed),
        owned_(std::move(model)) {}

private:
  std::unique_ptr<optim::sequential<float>> owned_;
};
// [/snippet]

// [snippet:observer]
/// Prints each evaluation of the test set as the job runs.
struct print_evaluations : actors::job_observer {
  void on_evaluation(const actors::evaluation_event& e) override {
    std::cout << "evaluation after " << e.steps << " steps: accuracy "
              << e.accuracy << ", loss " << e.loss << std::endl;
  }
};
// [/snippet]

int main(int argc, char** argv) {
  std::uint64_t steps = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 400;
  std::uint32_t workers = argc > 2 ? std::atoi(argv[2]) : 2;
  const std::uint64_t seed = 42;
  std::cout << "own_model: seed " << seed << ", " << workers << " workers, "
            << steps << " steps each" << std::endl;
  auto data = std::make_shared<const optim::train_test>(
      optim::load_mnist_dir(optim::fashion_mnist_dir));

  // [snippet:job]
  auto init = make_model(data->train.sample_shape);
  init.init(seed);
  actors::job_config job;
  job.algorithm = algos::make_algorithm("downpour");
  job.workers = workers;
  job.shards = 1;
  job.init = std::make_shared<const std::vector<float>>(
      init.params(), init.params() + init.size());
  job.server.optimizer.name = "adagrad";
  job.server.lr = 0.05;
  job.steps_per_worker = steps;
  // Worker w trains on every workers-th example.
  job.make_replica = [data, workers](messages::worker_id w) {
    std::vector<std::size_t> mine;
    for (std::size_t i = w; i < data->train.size(); i += workers)
      mine.push_back(i);
    auto model = std::make_unique<optim::sequential<float>>(
        make_model(data->train.sample_shape));
    return std::make_unique<own_replica>(std::move(model), data->train,
                                         std::move(mine), seed + w);
  };
  // The shard's parameters, evaluated on the test set.
  auto eval_model = std::make_shared<optim::sequential<float>>(
      make_model(data->train.sample_shape));
  job.evaluate = [eval_model, data](const float* p, std::size_t n) {
    std::copy(p, p + n, eval_model->params());
    return optim::evaluate(*eval_model, data->test, 64);
  };
  job.eval_every_steps = workers * steps / 4;
  job.observers.push_back(std::make_shared<print_evaluations>());
  job.final_params = std::make_shared<std::vector<float>>();
  auto result = actors::run_job(job);
  // [/snippet]

  if (result.contains("error")) {
    std::cerr << "own_model: " << result["error"] << '\n';
    return 1;
  }
  std::copy(job.final_params->begin(), job.final_params->end(),
            eval_model->params());
  auto final = optim::evaluate(*eval_model, data->test, 64);
  std::cout << "param hash "
            << optim::hash_params(job.final_params->data(),
                                  job.final_params->size())
            << "\nfinal accuracy " << final.accuracy << std::endl;
  return final.accuracy > 0.1 ? 0 : 1;
}

// Assembling a model of one's own from troupe's layers and training it with
// the same step every troupe worker runs.
//
//   custom_model [epochs]

#include <cstdlib>
#include <iostream>
#include <numeric>
#include <troupe/optim/conv2d.hpp>
#include <troupe/optim/dense.hpp>
#include <troupe/optim/flatten.hpp>
#include <troupe/optim/max_pool2d.hpp>
#include <troupe/optim/relu.hpp>
#include <troupe/optim/trainer.hpp>

using namespace troupe::optim;

int main(int argc, char** argv) {
  int epochs = argc > 1 ? std::atoi(argv[1]) : 1;
  auto data = load_mnist_dir(fashion_mnist_dir);

  // A small convnet: conv 3x3 1->8, relu, pool, flatten, dense 1568->64, dense.
  sequential<float> model{shape{1, 28, 28}};
  model.add<conv2d<float>>(conv2d_options{8, 3, 1, 1})
      .add<relu<float>>()
      .add<max_pool2d<float>>(2)
      .add<flatten<float>>()
      .add<dense<float>>(64)
      .add<relu<float>>()
      .add<dense<float>>(10);
  model.finalize();
  model.init(42);
  for (const auto& r : model.ranges().ranges())
    std::cout << r.name << ": offset " << r.offset << ", " << r.size
              << " parameters\n";

  std::vector<std::size_t> all(data.train.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  optimizer_options opt;
  opt.name = "momentum";
  schedule_options lr;
  lr.base_lr = 0.05;
  local_trainer trainer{model, data.train, all, 64, opt, schedule{lr}, 42};
  while (trainer.epoch() < static_cast<std::size_t>(epochs))
    trainer.step();
  auto eval = evaluate(model, data.test);
  std::cout << "test accuracy after " << epochs
            << " epoch(s): " << eval.accuracy << '\n';
  return eval.accuracy > 0.5 ? 0 : 1;
}

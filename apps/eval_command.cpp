#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/cli.hpp"
#include "apps/data_source.hpp"
#include "apps/model_commands.hpp"
#include "optim/model_spec.hpp"
#include "optim/param_hash.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

optim::loaded_model load_model_flag(const std::string& command,
                                    const std::string& path) {
  if (path.empty())
    throw usage_error(command
                      + ": --model=FILE is required (a model saved "
                        "by troupe train --save)");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw usage_error(command + ": --model=" + path + ": no such file");
  return optim::load_model(path);
}

void scale_inputs(optim::matrix<float>& x, const optim::scaling& s) {
  // The expression the standardizations apply, for the same floats.
  optim::apply_scaling(s, x);
}

int eval_main(const std::vector<std::string>& args) {
  std::string model_path, data, label_column;
  std::uint64_t batch = 0;
  bool json_only = false;
  option_parser p{"troupe eval"};
  p.add(model_path, "model", "FILE: a model saved by troupe train --save")
      .add(data, "data",
           "the data whose test set to evaluate on (default: the run's "
           "--data, from the model file)")
      .add(label_column, "label-column",
           "NAME: the label's column of CSV data (default: the run's "
           "--label-column, from the model file)")
      .add(batch, "batch",
           "examples per forward pass (default: the run's evaluation batch)")
      .add(json_only, "json",
           "accepted for symmetry: the JSON is always "
           "printed on stdout");
  return guarded_main("troupe eval", [&] {
    if (!p.parse(args))
      return 0;
    auto loaded = load_model_flag("troupe eval", model_path);
    auto& info = loaded.info;
    auto options = nlohmann::json::parse(
        info.options.empty() ? std::string{"{}"} : info.options);
    if (data.empty())
      data = options.value("data", std::string{"fashion-mnist"});
    if (batch == 0) {
      auto it = info.metadata.find("troupe.eval_batch");
      batch = it != info.metadata.end()
                  ? std::strtoull(it->second.c_str(), nullptr, 10)
                  : options.value("batch", std::uint64_t{64});
      batch = std::max<std::uint64_t>(batch, 1);
    }
    // The run's label column, for CSV data (of the run or not).
    if (label_column.empty() && is_tabular(data))
      label_column = options.value("label_column", std::string{});
    auto test = load_test_data(data, options.value("seed", std::uint64_t{1}),
                               label_column);
    if (!(test.sample_shape == info.sample_shape))
      throw usage_error("troupe eval: --data=" + data + " has samples of shape "
                        + optim::to_string(test.sample_shape) + ", the model "
                        + model_path + " takes "
                        + optim::to_string(info.sample_shape));
    if (test.classes > info.classes)
      throw usage_error("troupe eval: --data=" + data + " has "
                        + std::to_string(test.classes) + " classes, the model "
                        + model_path + " " + std::to_string(info.classes));
    scale_inputs(test.x, info.input_scaling);
    auto& m = loaded.model;
    bool finite = std::all_of(m.params(), m.params() + m.size(),
                              [](float x) { return std::isfinite(x); });
    auto e = optim::evaluate(m, test, batch);
    nlohmann::json out{{"model", model_path},
                       {"architecture", optim::model_label(info.model)},
                       {"parameters", m.size()},
                       {"param_hash", optim::hash_params(m.params(), m.size())},
                       {"finite_weights", finite},
                       {"data", test.name},
                       {"examples", e.samples},
                       {"batch", batch},
                       {"test_accuracy", e.accuracy},
                       {"test_loss", e.loss}};
    std::cerr << "troupe eval: " << optim::model_label(info.model) << " from "
              << model_path << ": test accuracy " << e.accuracy << ", loss "
              << e.loss << " on " << e.samples << " examples of " << test.name
              << '\n';
    if (!finite)
      std::cerr << "troupe eval: warning: the model holds non-finite weights\n";
    std::cout << out.dump() << std::endl;
    return 0;
  });
}

} // namespace troupe::apps

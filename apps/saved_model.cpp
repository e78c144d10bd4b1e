#include "apps/saved_model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "optim/model_file.hpp"
#include "optim/model_spec.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

void check_model_flags(const train_options& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!o.init.empty()) {
    if (!fs::exists(o.init, ec))
      throw usage_error("troupe train: --init=" + o.init + ": no such file");
    if (fs::is_directory(o.init, ec))
      throw usage_error("troupe train: --init=" + o.init
                        + " is a directory, not a model file");
    if (!std::ifstream{o.init})
      throw usage_error("troupe train: --init=" + o.init + ": cannot read it");
  }
  if (!o.save.empty()) {
    auto parent = fs::path{o.save}.parent_path();
    if (parent.empty())
      parent = ".";
    if (fs::is_directory(o.save, ec))
      throw usage_error("troupe train: --save=" + o.save
                        + " is a directory; name the file to write");
    if (!fs::is_directory(parent, ec))
      throw usage_error("troupe train: --save=" + o.save + ": the directory "
                        + parent.string() + " does not exist");
    if (::access(parent.c_str(), W_OK) != 0)
      throw usage_error("troupe train: --save=" + o.save + ": cannot write in "
                        + parent.string());
  }
}

void apply_init(const train_options& o, const optim::dataset& train,
                optim::sequential<float>& m) {
  if (o.init.empty())
    return;
  auto bytes = optim::read_model_file(o.init);
  auto info = optim::decode_model_info(bytes, o.init);
  auto refuse = [&](const std::string& what) {
    throw usage_error("troupe train: --init=" + o.init + " " + what);
  };
  if (!optim::same_architecture(info.model, o.model))
    refuse("holds a " + optim::model_label(info.model) + " model, not --model="
           + optim::model_label(o.model) + " (their layers differ)");
  if (!(info.sample_shape == train.sample_shape))
    refuse("was trained on samples of shape "
           + optim::to_string(info.sample_shape) + ", the data's are "
           + optim::to_string(train.sample_shape));
  if (info.classes != train.classes)
    refuse("has " + std::to_string(info.classes) + " classes, the data "
           + std::to_string(train.classes));
  optim::decode_params(bytes, o.init, m);
}

final_model::final_model(const train_options& o, const optim::dataset& train,
                         optim::scaling scaling)
    : model_(o.model), save_(o.save), report_(o.report), options_(to_spec(o)),
      sample_shape_(train.sample_shape), classes_(train.classes),
      // The batch of the run's own evaluations (troupe eval repeats them
      // exactly); a driver of its own evaluates in 256s.
      eval_batch_(o.algorithm
                          && o.algorithm->run_by() == algos::runner::own_driver
                      ? 256
                      : o.batch),
      scaling_(scaling) {
  // Only a model with buffers needs examples to estimate them.
  try {
    if (optim::make_model<float>(o.model, sample_shape_, classes_).buffer_size()
        > 0)
      calibration_ = optim::calibration_set(train);
  } catch (const std::exception&) {
    // save() reports a model that does not build
  }
}

void final_model::save(nlohmann::json& result, progress& bar) const {
  std::vector<std::string> paths;
  if (!save_.empty())
    paths.push_back(save_);
  if (!report_.empty()) {
    // Once when --save names the report's own copy.
    auto in_report = std::filesystem::path{report_} / "model.safetensors";
    std::error_code ec;
    if (save_.empty()
        || std::filesystem::weakly_canonical(save_, ec)
               != std::filesystem::weakly_canonical(in_report, ec))
      paths.push_back(in_report.string());
  }
  if (paths.empty())
    return;
  if (params.empty()) {
    result["save_error"] = "the run yielded no final parameters";
    bar.message("troupe train: no model saved: the run yielded no final "
                "parameters");
    return;
  }
  try {
    auto m = optim::make_model<float>(model_, sample_shape_, classes_);
    if (params.size() != m.size())
      throw std::runtime_error("the run's " + std::to_string(params.size())
                               + " parameters are not the model's "
                               + std::to_string(m.size()));
    std::copy(params.begin(), params.end(), m.params());
    optim::calibrate(m, calibration_, optim::calibration_examples, eval_batch_);
    optim::model_info info;
    info.model = model_;
    info.options = options_;
    info.version = TROUPE_VERSION;
    info.input_scaling = scaling_;
    info.metadata["troupe.eval_batch"] = std::to_string(eval_batch_);
    for (const auto& path : paths)
      optim::save_model(path, m, info);
    result["saved_model"] = paths;
    bool finite = std::all_of(params.begin(), params.end(),
                              [](float x) { return std::isfinite(x); });
    bar.message("troupe train: model saved to " + paths.front()
                + (paths.size() > 1 ? " and " + paths.back() : "")
                + (finite ? "" : " (it holds non-finite weights)"));
  } catch (const std::exception& e) {
    result["save_error"] = e.what();
    bar.message(std::string{"troupe train: "} + e.what());
  }
}

} // namespace troupe::apps

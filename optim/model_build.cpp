// build_model of optim/model_spec.hpp: a checked description to layers.

#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "optim/activation.hpp"
#include "optim/avg_pool2d.hpp"
#include "optim/batch_norm.hpp"
#include "optim/conv2d.hpp"
#include "optim/dense.hpp"
#include "optim/dropout.hpp"
#include "optim/embedding.hpp"
#include "optim/flatten.hpp"
#include "optim/max_pool2d.hpp"
#include "optim/model_spec.hpp"
#include "optim/relu.hpp"
#include "optim/residual.hpp"
#include "optim/torchscript_layer.hpp"

namespace troupe::optim {

namespace {

using json = nlohmann::json;

/// The layer a checked description's entry names; `outputs` is what
/// "units": "classes" stands for.
template <class T>
std::unique_ptr<layer<T>> make_layer(const json& layer, int outputs) {
  auto type = layer["type"].get<std::string>();
  auto get = [&](const char* key, int fallback) {
    auto it = layer.find(key);
    return it == layer.end() ? fallback : it->template get<int>();
  };
  auto number = [&](const char* key, double fallback) {
    auto it = layer.find(key);
    return it == layer.end() ? fallback : it->template get<double>();
  };
  if (type == "dense") {
    const auto& u = layer["units"];
    return std::make_unique<dense<T>>(u.is_string() ? outputs : u.get<int>());
  }
  if (type == "conv2d") {
    conv2d_options c;
    c.out_channels = get("out_channels", 1);
    c.kernel = get("kernel", 1);
    c.stride = get("stride", 1);
    c.padding = get("padding", 0);
    return std::make_unique<conv2d<T>>(c);
  }
  if (type == "max_pool2d")
    return std::make_unique<max_pool2d<T>>(get("kernel", 2));
  if (type == "avg_pool2d")
    return std::make_unique<avg_pool2d<T>>(get("kernel", 2));
  if (type == "relu")
    return std::make_unique<relu<T>>();
  if (type == "tanh")
    return std::make_unique<activation<T>>(activation_kind::tanh);
  if (type == "sigmoid")
    return std::make_unique<activation<T>>(activation_kind::sigmoid);
  if (type == "gelu")
    return std::make_unique<activation<T>>(activation_kind::gelu);
  if (type == "flatten")
    return std::make_unique<flatten<T>>();
  if (type == "dropout")
    return std::make_unique<dropout<T>>(number("p", 0));
  if (type == "batch_norm")
    return std::make_unique<batch_norm<T>>(number("eps", 1e-5),
                                           number("momentum", 0.1));
  if (type == "embedding")
    return std::make_unique<embedding<T>>(get("vocabulary", 1), get("dim", 1));
  if (type == "residual") {
    std::vector<std::unique_ptr<optim::layer<T>>> inner;
    for (const auto& x : layer["layers"])
      inner.push_back(make_layer<T>(x, outputs));
    return std::make_unique<residual<T>>(std::move(inner));
  }
  if (type == "torchscript") {
#ifdef TROUPE_HAVE_TORCH
    return std::make_unique<torchscript_layer<T>>(
        layer["file"].template get<std::string>());
#else
    throw std::invalid_argument("torchscript: this troupe was built without "
                                "libtorch");
#endif
  }
  throw std::invalid_argument("unknown layer type " + type);
}

} // namespace

template <class T>
sequential<T> build_model(const std::string& model, shape input, int classes) {
  return build_stage<T>(model, input, classes, 0, 0);
}

template <class T>
sequential<T> build_stage(const std::string& model, shape input, int classes,
                          std::size_t first, std::size_t last) {
  auto d = json::parse(model_description(model));
  const auto loss = model_loss(model);
  if (loss == loss_kind::cross_entropy && classes < 2)
    throw std::invalid_argument(
        "the model trains with cross_entropy, but the data has "
        + (classes <= 0 ? std::string{"no classes (regression targets); use "
                                      "\"loss\": \"mse\""}
                        : "one class"));
  if (loss == loss_kind::binary_cross_entropy && classes != 2)
    throw std::invalid_argument(
        "the model trains with binary_cross_entropy, which needs 2 classes "
        "(labels 0 and 1), but the data has "
        + std::to_string(classes < 0 ? 0 : classes));
  const int outputs = loss_outputs(loss, classes);
  sequential<T> m{input};
  m.set_loss(loss);
  for (const auto& layer : d["layers"])
    m.add(make_layer<T>(layer, outputs));
#ifdef TROUPE_HAVE_TORCH
  // The first layer is never asked for its input's gradient: autograd need
  // not track the data.
  if (first == 0)
    if (auto* ts = dynamic_cast<torchscript_layer<T>*>(m.layers()[0].get()))
      ts->set_input_gradient(false);
#endif
  if (last == 0) {
    m.finalize();
  } else {
    m.finalize(first, last);
    if (!m.ends_model())
      return m;
  }
  auto out = m.output_shape().size();
  if (out != static_cast<std::size_t>(outputs))
    throw std::invalid_argument(
        "the model gives " + std::to_string(out) + " values per sample, but "
        + (loss == loss_kind::cross_entropy
               ? "the data has " + std::to_string(classes) + " classes"
               : std::string{to_string(loss)} + " needs 1")
        + " (end with {\"type\": \"dense\", \"units\": \"classes\"})");
  return m;
}

template sequential<float> build_model<float>(const std::string&, shape, int);
template sequential<double> build_model<double>(const std::string&, shape, int);
template sequential<float> build_stage<float>(const std::string&, shape, int,
                                              std::size_t, std::size_t);
template sequential<double> build_stage<double>(const std::string&, shape, int,
                                                std::size_t, std::size_t);

} // namespace troupe::optim

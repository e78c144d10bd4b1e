#include "optim/model_spec.hpp"

#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "optim/activation.hpp"
#include "optim/avg_pool2d.hpp"
#include "optim/conv2d.hpp"
#include "optim/dataset.hpp"
#include "optim/dense.hpp"
#include "optim/flatten.hpp"
#include "optim/max_pool2d.hpp"
#include "optim/quote.hpp"
#include "optim/relu.hpp"

namespace troupe::optim {

namespace detail {
// models/*.json, compiled in (optim/CMakeLists.txt, cmake/embed.cmake).
const std::string& model_logreg_json();
const std::string& model_mlp_json();
const std::string& model_lenet_json();
} // namespace detail

namespace {

using json = nlohmann::json;

struct builtin {
  const char* name;
  const std::string& (*text)();
};

const builtin builtins[] = {{"logreg", detail::model_logreg_json},
                            {"mlp", detail::model_mlp_json},
                            {"lenet", detail::model_lenet_json}};

/// The options each layer type takes (none: an empty list).
const std::vector<std::pair<std::string, std::vector<std::string>>>&
layer_options() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>>
      table{{"dense", {"units"}},
            {"conv2d", {"out_channels", "kernel", "stride", "padding"}},
            {"max_pool2d", {"kernel"}},
            {"avg_pool2d", {"kernel"}},
            {"relu", {}},
            {"tanh", {}},
            {"sigmoid", {}},
            {"gelu", {}},
            {"flatten", {}}};
  return table;
}

std::string joined(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs)
    out += (out.empty() ? "" : ", ") + x;
  return out;
}

/// A layer's integer option in [lo, hi] (`fallback` when absent, -1: none).
int int_option(const json& layer, const std::string& where, const char* key,
               int lo, int hi, int fallback) {
  auto it = layer.find(key);
  if (it == layer.end()) {
    if (fallback >= 0)
      return fallback;
    throw std::invalid_argument(where + ": needs \"" + key
                                + "\" (an integer from " + std::to_string(lo)
                                + " to " + std::to_string(hi) + ")");
  }
  if (!it->is_number_integer() || it->get<std::int64_t>() < lo
      || it->get<std::int64_t>() > hi)
    throw std::invalid_argument(
        where + ": " + key + " must be an integer from " + std::to_string(lo)
        + " to " + std::to_string(hi) + ", not " + quote(it->dump()));
  return static_cast<int>(it->get<std::int64_t>());
}

/// Checks a parsed description; returns it canonical.
json checked(const json& d) {
  if (!d.is_object())
    throw std::invalid_argument("a model description must be a JSON object "
                                "with \"layers\"");
  for (auto it = d.begin(); it != d.end(); ++it)
    if (it.key() != "name" && it.key() != "layers")
      throw std::invalid_argument("unknown key " + quote(it.key())
                                  + " (a description has \"name\" and "
                                    "\"layers\")");
  if (d.contains("name")
      && (!d["name"].is_string() || d["name"].get<std::string>().empty()
          || d["name"].get<std::string>().size() > 64
          || d["name"].get<std::string>().find_first_of("\"\\/{}\n\r\t")
                 != std::string::npos))
    throw std::invalid_argument("\"name\" must be a short string (at most 64 "
                                "characters, no quotes, slashes or braces)");
  auto layers = d.find("layers");
  if (layers == d.end() || !layers->is_array() || layers->empty())
    throw std::invalid_argument("\"layers\" must be a non-empty list of "
                                "layers");
  if (layers->size() > max_model_layers)
    throw std::invalid_argument(
        "\"layers\" lists " + std::to_string(layers->size())
        + " layers; at most " + std::to_string(max_model_layers));
  std::size_t index = 0;
  for (const auto& layer : *layers) {
    ++index;
    std::string where = "layer " + std::to_string(index);
    if (!layer.is_object() || !layer.contains("type")
        || !layer["type"].is_string())
      throw std::invalid_argument(where
                                  + ": must be an object with a "
                                    "\"type\"");
    auto type = layer["type"].get<std::string>();
    const std::vector<std::string>* known = nullptr;
    for (const auto& [t, opts] : layer_options())
      if (t == type)
        known = &opts;
    if (known == nullptr)
      throw std::invalid_argument(where + ": unknown type " + quote(type)
                                  + " (known: " + joined(model_layer_types())
                                  + ")");
    where += " (" + type + ")";
    for (auto it = layer.begin(); it != layer.end(); ++it) {
      if (it.key() == "type")
        continue;
      bool ok = false;
      for (const auto& k : *known)
        ok = ok || k == it.key();
      if (!ok)
        throw std::invalid_argument(
            where + ": unknown option " + quote(it.key())
            + (known->empty() ? " (it takes none)"
                              : " (it takes " + joined(*known) + ")"));
    }
    if (type == "dense") {
      auto u = layer.find("units");
      if (u == layer.end() || !(u->is_string() && *u == "classes"))
        int_option(layer, where, "units", 1, 1 << 20, -1);
    } else if (type == "conv2d") {
      int_option(layer, where, "out_channels", 1, 4096, -1);
      int_option(layer, where, "kernel", 1, 64, -1);
      int_option(layer, where, "stride", 1, 64, 1);
      int_option(layer, where, "padding", 0, 64, 0);
    } else if (type == "max_pool2d" || type == "avg_pool2d") {
      int_option(layer, where, "kernel", 1, 64, -1);
    }
  }
  return d;
}

json parsed(const std::string& text) {
  if (text.size() > max_model_description)
    throw std::invalid_argument(
        "the model description has " + std::to_string(text.size())
        + " bytes; at most " + std::to_string(max_model_description));
  try {
    return checked(json::parse(text));
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string{"not valid JSON: "} + e.what());
  }
}

/// The description of a built-in name, or null.
const std::string* builtin_text(const std::string& name) {
  for (const auto& b : builtins)
    if (name == b.name)
      return &b.text();
  return nullptr;
}

} // namespace

const std::vector<std::string>& model_layer_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out;
    for (const auto& [t, opts] : layer_options())
      out.push_back(t);
    return out;
  }();
  return types;
}

bool is_model_description(const std::string& model) {
  auto first = model.find_first_not_of(" \t\r\n");
  return first != std::string::npos
         && (model[first] == '{' || model[first] == '[');
}

bool names_model_file(const std::string& model) {
  return !is_model_description(model) && model.size() > 5
         && model.compare(model.size() - 5, 5, ".json") == 0;
}

std::string model_description(const std::string& model) {
  if (is_model_description(model))
    return parsed(model).dump();
  if (const auto* text = builtin_text(model))
    return parsed(*text).dump();
  std::string known;
  for (const auto& x : model_names())
    known += (known.empty() ? "" : ", ") + x;
  throw std::invalid_argument("unknown model " + quote(model) + " (known: "
                              + known + ", or a description FILE.json)");
}

bool same_architecture(const std::string& a, const std::string& b) {
  try {
    return json::parse(model_description(a))["layers"]
           == json::parse(model_description(b))["layers"];
  } catch (const std::exception&) {
    return false;
  }
}

std::string model_label(const std::string& model) {
  if (!is_model_description(model))
    return model;
  try {
    auto d = json::parse(model);
    if (d.is_object() && d.contains("name") && d["name"].is_string())
      return sanitize(d["name"].get<std::string>(), 64);
  } catch (const json::exception&) {
  }
  return "custom";
}

std::string read_model_description(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw data_error(path + ": no such model description file");
  auto size = std::filesystem::file_size(path, ec);
  if (ec || size > max_model_description)
    throw data_error(path + ": a model description has at most "
                     + std::to_string(max_model_description) + " bytes");
  std::ifstream in{path, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  if (!in)
    throw data_error(path + ": cannot be read");
  try {
    auto d = parsed(text.str());
    if (!d.contains("name")) {
      auto stem = std::filesystem::path{path}.stem().string();
      d["name"]
          = stem.empty() || stem.size() > 64
                    || stem.find_first_of("\"\\/{}\n\r\t") != std::string::npos
                ? std::string{"custom"}
                : stem;
    }
    return d.dump();
  } catch (const std::invalid_argument& e) {
    throw data_error(path + ": " + e.what());
  }
}

template <class T>
sequential<T> build_model(const std::string& model, shape input, int classes) {
  auto d = json::parse(model_description(model));
  sequential<T> m{input};
  for (const auto& layer : d["layers"]) {
    auto type = layer["type"].get<std::string>();
    auto get = [&](const char* key, int fallback) {
      auto it = layer.find(key);
      return it == layer.end() ? fallback : it->template get<int>();
    };
    if (type == "dense") {
      const auto& u = layer["units"];
      m.template add<dense<T>>(u.is_string() ? classes : u.get<int>());
    } else if (type == "conv2d") {
      conv2d_options c;
      c.out_channels = get("out_channels", 1);
      c.kernel = get("kernel", 1);
      c.stride = get("stride", 1);
      c.padding = get("padding", 0);
      m.template add<conv2d<T>>(c);
    } else if (type == "max_pool2d") {
      m.template add<max_pool2d<T>>(get("kernel", 2));
    } else if (type == "avg_pool2d") {
      m.template add<avg_pool2d<T>>(get("kernel", 2));
    } else if (type == "relu") {
      m.template add<relu<T>>();
    } else if (type == "tanh") {
      m.template add<activation<T>>(activation_kind::tanh);
    } else if (type == "sigmoid") {
      m.template add<activation<T>>(activation_kind::sigmoid);
    } else if (type == "gelu") {
      m.template add<activation<T>>(activation_kind::gelu);
    } else if (type == "flatten") {
      m.template add<flatten<T>>();
    }
  }
  m.finalize();
  auto out = m.output_shape().size();
  if (out != static_cast<std::size_t>(classes))
    throw std::invalid_argument(
        "the model gives " + std::to_string(out)
        + " values per sample, but the data has " + std::to_string(classes)
        + " classes (end with {\"type\": \"dense\", \"units\": \"classes\"})");
  return m;
}

template sequential<float> build_model<float>(const std::string&, shape, int);
template sequential<double> build_model<double>(const std::string&, shape, int);

} // namespace troupe::optim

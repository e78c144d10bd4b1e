#include "optim/model_spec.hpp"

#include <limits>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "optim/dataset.hpp"
#include "optim/loss.hpp"
#include "optim/quote.hpp"
#include "optim/torchscript_layer.hpp"

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
            {"flatten", {}},
            {"dropout", {"p"}},
            {"batch_norm", {"eps", "momentum"}},
            {"embedding", {"vocabulary", "dim"}},
            {"residual", {"layers"}},
            {"torchscript", {"file"}}};
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

/// A layer's numeric option in (lo, hi] (`fallback` when absent).
double number_option(const json& layer, const std::string& where,
                     const char* key, double lo, double hi, double fallback) {
  auto it = layer.find(key);
  if (it == layer.end())
    return fallback;
  if (!it->is_number() || !(it->get<double>() > lo)
      || !(it->get<double>() <= hi))
    throw std::invalid_argument(where + ": " + key + " must be a number above "
                                + quote(json(lo).dump()) + " and at most "
                                + quote(json(hi).dump()) + ", not "
                                + quote(it->dump()));
  return it->get<double>();
}

/// A "torchscript" layer's file: a module saved with torch.jit.save, loaded
/// once to check it (optim/torchscript_layer.hpp).
void check_torchscript(const json& layer, const std::string& where) {
  auto f = layer.find("file");
  if (f == layer.end() || !f->is_string() || f->get<std::string>().empty())
    throw std::invalid_argument(where
                                + ": needs \"file\" (the path of a "
                                  "module saved with torch.jit.save)");
#ifdef TROUPE_HAVE_TORCH
  try {
    check_torchscript_file(f->get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where + ": " + e.what());
  }
#else
  throw std::invalid_argument(where + ": " + f->get<std::string>()
                              + ": this troupe was built without libtorch "
                                "(install libtorch-dev and rebuild it)");
#endif
}

/// Residual blocks nest at most this deep.
constexpr int max_block_depth = 8;

void check_layers(const json& layers, const std::string& outer, int depth,
                  std::size_t& count);

/// Checks one layer; `where` names it ("layer 3", "layer 2, layer 1").
void check_layer(const json& layer, std::string where, int depth,
                 std::size_t& count) {
  if (!layer.is_object() || !layer.contains("type")
      || !layer["type"].is_string())
    throw std::invalid_argument(where + ": must be an object with a \"type\"");
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
  } else if (type == "dropout") {
    if (!layer.contains("p"))
      throw std::invalid_argument(where
                                  + ": needs \"p\" (the probability "
                                    "of dropping a value, in [0, 1))");
    auto p = layer["p"];
    if (!p.is_number() || !(p.get<double>() >= 0) || !(p.get<double>() < 1))
      throw std::invalid_argument(where + ": p must be a number in [0, 1), "
                                  + "not " + quote(p.dump()));
  } else if (type == "batch_norm") {
    number_option(layer, where, "eps", 0, 1, 1e-5);
    number_option(layer, where, "momentum", 0, 1, 0.1);
  } else if (type == "embedding") {
    int_option(layer, where, "vocabulary", 1, 1 << 24, -1);
    int_option(layer, where, "dim", 1, 4096, -1);
  } else if (type == "residual") {
    if (depth >= max_block_depth)
      throw std::invalid_argument(where + ": residual blocks nest at most "
                                  + std::to_string(max_block_depth) + " deep");
    check_layers(layer.contains("layers") ? layer["layers"] : json{}, where,
                 depth + 1, count);
  } else if (type == "torchscript") {
    check_torchscript(layer, where);
  }
}

/// Checks a list of layers; `outer` names the block holding them (empty:
/// the model). Counts them, nested ones included, into `count`.
void check_layers(const json& layers, const std::string& outer, int depth,
                  std::size_t& count) {
  const std::string in = outer.empty() ? "" : outer + ": ";
  if (!layers.is_array() || layers.empty())
    throw std::invalid_argument(in
                                + "\"layers\" must be a non-empty list "
                                  "of layers");
  std::size_t index = 0;
  for (const auto& layer : layers) {
    if (++count > max_model_layers)
      throw std::invalid_argument("too many layers: at most "
                                  + std::to_string(max_model_layers)
                                  + ", those of residual blocks included");
    check_layer(layer,
                (outer.empty() ? "" : outer + ", ") + "layer "
                    + std::to_string(++index),
                depth, count);
  }
}

/// Checks a parsed description; returns it canonical.
json checked(const json& d) {
  if (!d.is_object())
    throw std::invalid_argument("a model description must be a JSON object "
                                "with \"layers\"");
  for (auto it = d.begin(); it != d.end(); ++it)
    if (it.key() != "name" && it.key() != "layers" && it.key() != "loss")
      throw std::invalid_argument("unknown key " + quote(it.key())
                                  + " (a description has \"name\", "
                                    "\"layers\" and \"loss\")");
  if (d.contains("name")
      && (!d["name"].is_string() || d["name"].get<std::string>().empty()
          || d["name"].get<std::string>().size() > 64
          || d["name"].get<std::string>().find_first_of("\"\\/{}\n\r\t")
                 != std::string::npos))
    throw std::invalid_argument("\"name\" must be a short string (at most 64 "
                                "characters, no quotes, slashes or braces)");
  if (d.contains("loss")) {
    if (!d["loss"].is_string())
      throw std::invalid_argument("\"loss\" must be one of "
                                  + joined(loss_names()));
    parse_loss(d["loss"].get<std::string>());
  }
  if (!d.contains("layers"))
    throw std::invalid_argument("\"layers\" must be a non-empty list of "
                                "layers");
  std::size_t count = 0;
  check_layers(d["layers"], "", 0, count);
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

std::string model_description(const std::string& model) {
  if (is_model_description(model))
    return parsed(model).dump();
  if (const auto* text = builtin_text(model))
    return parsed(*text).dump();
  std::string known;
  for (const auto& x : model_names())
    known += (known.empty() ? "" : ", ") + x;
  throw std::invalid_argument("unknown model " + quote(model)
                              + " (known: " + known
                              + ", a description FILE.json or "
                                "torchscript:FILE.pt)");
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

loss_kind model_loss(const std::string& model) {
  auto d = json::parse(model_description(model));
  return d.contains("loss") ? parse_loss(d["loss"].get<std::string>())
                            : loss_kind::cross_entropy;
}

} // namespace troupe::optim

#include "optim/model_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "optim/atomic_file.hpp"
#include "optim/conv2d.hpp"
#include "optim/dense.hpp"
#include "optim/embedding.hpp"
#include "optim/quote.hpp"
#include "optim/residual.hpp"
#include "optim/torchscript_layer.hpp"

namespace troupe::optim {

namespace {

/// Where a tensor of the file lives in the flat parameter vector (or, for
/// `buffer`, in the buffer vector). A dense weight is stored `out x in`
/// column-major and saved [out, in] row-major: `rows` > 0 marks that
/// transposition.
struct placement {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::size_t offset = 0, size = 0;
  std::size_t rows = 0, cols = 0;
  bool buffer = false;
};

/// Every layer with the name its ranges start with: "dense2", and inside a
/// residual block "residual1.dense1".
void collect_layers(
    const layer<float>& l, const std::string& name,
    std::vector<std::pair<std::string, const layer<float>*>>& out) {
  out.emplace_back(name, &l);
  if (auto* r = dynamic_cast<const residual<float>*>(&l))
    for (std::size_t i = 0; i < r->inner().size(); ++i)
      collect_layers(*r->inner()[i], name + "." + r->names()[i], out);
}

/// The placements of a model's ranges: tensor "<i>.<rest>" for the range
/// "<name of layer i>.<rest>" ("3.weight", "2.dense1.bias",
/// "1.running_mean"), in the order of the parameter vector, then the
/// buffers.
std::vector<placement> placements(const sequential<float>& m) {
  std::vector<std::pair<std::string, const layer<float>*>> layers;
  for (std::size_t i = 0; i < m.layers().size(); ++i)
    collect_layers(*m.layers()[i], m.names()[i], layers);
  std::vector<placement> out;
  for (const auto* table : {&m.ranges(), &m.buffer_ranges()})
    for (const auto& r : table->ranges()) {
      placement p;
      for (std::size_t i = 0; i < m.layers().size(); ++i) {
        const auto& prefix = m.names()[i];
        if (r.name.size() > prefix.size()
            && r.name.compare(0, prefix.size() + 1, prefix + ".") == 0)
          p.name = std::to_string(i) + r.name.substr(prefix.size());
      }
      p.offset = r.offset;
      p.size = r.size;
      p.shape = {r.size};
      p.buffer = r.kind == range_kind::buffer;
      const layer<float>* owner = nullptr;
      for (const auto& [name, l] : layers)
        if (r.name.size() > name.size()
            && r.name.compare(0, name.size() + 1, name + ".") == 0
            && r.name.find('.', name.size() + 1) == std::string::npos)
          owner = l;
      if (r.kind == range_kind::weight) {
        if (auto* d = dynamic_cast<const dense<float>*>(owner)) {
          p.rows = static_cast<std::size_t>(d->out_features());
          p.cols = static_cast<std::size_t>(d->in_features());
          p.shape = {p.rows, p.cols};
        } else if (auto* c = dynamic_cast<const conv2d<float>*>(owner)) {
          std::uint64_t out_c = c->options().out_channels;
          std::uint64_t k = c->options().kernel;
          p.shape = {out_c, r.size / (out_c * k * k), k, k};
        } else if (auto* e = dynamic_cast<const embedding<float>*>(owner)) {
          const auto dim = static_cast<std::uint64_t>(e->dim());
          p.shape = {r.size / dim, dim};
        }
      }
#ifdef TROUPE_HAVE_TORCH
      // A TorchScript module's tensors have the module's shapes.
      for (const auto& [name, l] : layers)
        if (auto* ts = dynamic_cast<const torchscript_layer<float>*>(l);
            ts != nullptr
            && r.name.compare(0, name.size() + 1, name + ".") == 0)
          for (const auto* list : {&ts->parameters(), &ts->buffers()})
            for (const auto& t : *list)
              if (t.name == r.name.substr(name.size() + 1))
                p.shape.assign(t.shape.begin(), t.shape.end());
#endif
      out.push_back(std::move(p));
    }
  return out;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  return nlohmann::json(shape).dump();
}

nlohmann::json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw data_error(what + " is " + quote(text) + ", not JSON");
  }
}

/// The map of a "troupe.input_scaling" entry (`what` names it): {"mean":
/// x, "stddev": y > 0}, or {"mean": [...], "stddev": [...]} with one such
/// pair per feature (`features` of them), all within float's range.
scaling decode_scaling(const std::string& text, const std::string& what,
                       std::size_t features) {
  auto j = parse_json(text, what);
  auto refuse = [&] {
    return data_error(what + " is " + quote(text)
                      + ", not {\"mean\": x, \"stddev\": y > 0} (numbers, or "
                        "lists of one per feature: "
                      + std::to_string(features) + ")");
  };
  auto finite = [](const nlohmann::json& v) {
    return v.is_number()
           && std::abs(v.get<double>()) <= std::numeric_limits<float>::max();
  };
  auto positive = [&](const nlohmann::json& v) {
    return finite(v) && v.get<double>() > 0;
  };
  if (!j.is_object() || !j.contains("mean") || !j.contains("stddev"))
    throw refuse();
  const auto& mean = j["mean"];
  const auto& stddev = j["stddev"];
  scaling out;
  if (mean.is_array() && stddev.is_array()) {
    if (mean.size() != features || stddev.size() != features)
      throw refuse();
    for (std::size_t i = 0; i < features; ++i) {
      if (!finite(mean[i]) || !positive(stddev[i]))
        throw refuse();
      out.means.push_back(static_cast<float>(mean[i].get<double>()));
      out.stddevs.push_back(static_cast<float>(stddev[i].get<double>()));
    }
    return out;
  }
  if (!finite(mean) || !positive(stddev))
    throw refuse();
  out.mean = static_cast<float>(mean.get<double>());
  out.stddev = static_cast<float>(stddev.get<double>());
  return out;
}

} // namespace

std::vector<tensor_data> model_tensors(const sequential<float>& m) {
  std::vector<tensor_data> out;
  for (const auto& p : placements(m)) {
    const float* flat = p.buffer ? m.buffers() : m.params();
    tensor_data t{p.name, p.shape, std::vector<float>(p.size)};
    if (p.rows > 0) {
      for (std::size_t r = 0; r < p.rows; ++r)
        for (std::size_t c = 0; c < p.cols; ++c)
          t.values[r * p.cols + c] = flat[p.offset + r + c * p.rows];
    } else {
      std::copy(flat + p.offset, flat + p.offset + p.size, t.values.begin());
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string encode_model(const sequential<float>& m, const model_info& info) {
  auto meta = info.metadata;
  auto s = m.input_shape();
  meta["troupe.model"] = info.model;
  meta["troupe.sample_shape"] = nlohmann::json({s.c, s.h, s.w}).dump();
  // The data's classes: the outputs of a cross-entropy model, 2 for binary
  // cross-entropy, 0 (regression) for mse.
  const auto classes
      = m.loss() == loss_kind::cross_entropy
            ? m.output_shape().size()
            : (m.loss() == loss_kind::binary_cross_entropy ? 2 : 0);
  meta["troupe.classes"] = std::to_string(classes);
  meta["troupe.options"] = info.options.empty() ? "{}" : info.options;
  meta["troupe.version"] = info.version;
  const auto& sc = info.input_scaling;
  meta["troupe.input_scaling"]
      = (sc.per_feature()
             ? nlohmann::json({{"mean", sc.means}, {"stddev", sc.stddevs}})
             : nlohmann::json({{"mean", sc.mean}, {"stddev", sc.stddev}}))
            .dump();
  return encode_safetensors(model_tensors(m), meta);
}

void save_model(const std::string& path, const sequential<float>& m,
                const model_info& info) {
  write_file_atomic(path, encode_model(m, info));
}

std::string read_model_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw data_error(path + ": is a directory, not a model file");
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw data_error(path + ": cannot open: " + std::strerror(errno));
  std::string bytes{std::istreambuf_iterator<char>{in},
                    std::istreambuf_iterator<char>{}};
  if (in.bad())
    throw data_error(path + ": read error");
  return bytes;
}

model_info decode_model_info(std::string_view bytes, const std::string& file) {
  auto h = parse_safetensors(bytes, file);
  model_info info;
  info.metadata = h.metadata;
  auto entry = [&](const char* key) -> const std::string* {
    auto it = h.metadata.find(key);
    return it == h.metadata.end() ? nullptr : &it->second;
  };
  auto named = [&](const char* key) { return file + ": metadata " + key; };
  auto* model = entry("troupe.model");
  if (model == nullptr || model->empty())
    throw data_error(file
                     + ": no troupe.model in the metadata (a model "
                       "troupe did not save?)");
  info.model = *model;
  auto* shape_entry = entry("troupe.sample_shape");
  if (shape_entry == nullptr)
    throw data_error(file + ": no troupe.sample_shape in the metadata");
  auto s = parse_json(*shape_entry, named("troupe.sample_shape"));
  auto dim_ok = [](const nlohmann::json& d) {
    return d.is_number_integer() && d.get<std::int64_t>() >= 1
           && d.get<std::int64_t>() <= 65536;
  };
  if (!s.is_array() || s.size() != 3 || !dim_ok(s[0]) || !dim_ok(s[1])
      || !dim_ok(s[2]))
    throw data_error(named("troupe.sample_shape") + " is " + quote(*shape_entry)
                     + ", not [channels, height, width] in 1..65536");
  info.sample_shape = {s[0].get<int>(), s[1].get<int>(), s[2].get<int>()};
  auto* classes = entry("troupe.classes");
  if (classes == nullptr)
    throw data_error(file + ": no troupe.classes in the metadata");
  auto c = parse_json(*classes, named("troupe.classes"));
  if (!c.is_number_integer() || c.get<std::int64_t>() < 0
      || c.get<std::int64_t>() > (1 << 20))
    throw data_error(named("troupe.classes") + " is " + quote(*classes)
                     + ", not a count in 0..2^20 (0: regression)");
  info.classes = c.get<int>();
  if (auto* o = entry("troupe.options")) {
    if (!parse_json(*o, named("troupe.options")).is_object())
      throw data_error(named("troupe.options") + " is not a JSON object");
    info.options = *o;
  }
  if (auto* v = entry("troupe.version"))
    info.version = *v;
  if (auto* sc = entry("troupe.input_scaling"))
    info.input_scaling = decode_scaling(*sc, named("troupe.input_scaling"),
                                        info.sample_shape.size());
  return info;
}

void decode_params(std::string_view bytes, const std::string& file,
                   sequential<float>& m) {
  auto h = parse_safetensors(bytes, file);
  auto expected = placements(m);
  auto describe = [&] {
    std::string names;
    for (const auto& p : expected)
      names += (names.empty() ? "" : ", ") + p.name;
    return " (the model's tensors: " + names + ")";
  };
  std::vector<const tensor_entry*> found(expected.size(), nullptr);
  for (const auto& t : h.tensors) {
    std::size_t i = 0;
    while (i < expected.size() && expected[i].name != t.name)
      ++i;
    if (i == expected.size())
      throw data_error(file + ": tensor " + quote(t.name)
                       + " is not a parameter of the model" + describe());
    if (t.shape != expected[i].shape)
      throw data_error(file + ": tensor " + quote(t.name) + " has shape "
                       + shape_text(t.shape) + ", the model's is "
                       + shape_text(expected[i].shape));
    found[i] = &t;
  }
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (found[i] == nullptr)
      throw data_error(file + ": tensor " + quote(expected[i].name)
                       + " is missing" + describe());
  // Everything checked: only now is the model written.
  std::vector<float> values;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& p = expected[i];
    float* flat = (p.buffer ? m.buffers() : m.params()) + p.offset;
    if (p.rows == 0) {
      read_f32(bytes, h, *found[i], flat);
      continue;
    }
    values.resize(p.size);
    read_f32(bytes, h, *found[i], values.data());
    for (std::size_t r = 0; r < p.rows; ++r)
      for (std::size_t c = 0; c < p.cols; ++c)
        flat[r + c * p.rows] = values[r * p.cols + c];
  }
}

loaded_model decode_model(std::string_view bytes, const std::string& file) {
  auto info = decode_model_info(bytes, file);
  // The metadata is not trusted with an allocation: every built-in model
  // has at least as many parameters as input features and classes, and
  // the file holds them all.
  auto floats = (bytes.size() - parse_safetensors(bytes, file).data_start) / 4;
  if (info.sample_shape.size() > floats
      || static_cast<std::size_t>(info.classes) > floats)
    throw data_error(file
                     + ": the metadata's sample shape and classes need "
                       "more parameters than the file holds");
  try {
    auto m = make_model<float>(info.model, info.sample_shape, info.classes);
    decode_params(bytes, file, m);
    return {std::move(info), std::move(m)};
  } catch (const std::invalid_argument& e) {
    throw data_error(file + ": cannot rebuild the model: " + e.what());
  }
}

loaded_model load_model(const std::string& path) {
  auto bytes = read_model_file(path);
  return decode_model(bytes, path);
}

} // namespace troupe::optim

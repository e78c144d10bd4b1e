#include "optim/model_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "optim/atomic_file.hpp"
#include "optim/conv2d.hpp"
#include "optim/dense.hpp"
#include "optim/quote.hpp"

namespace troupe::optim {

namespace {

/// Where a tensor of the file lives in the flat parameter vector. A dense
/// weight is stored `out x in` column-major and saved [out, in] row-major:
/// `rows` > 0 marks that transposition.
struct placement {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::size_t offset = 0, size = 0;
  std::size_t rows = 0, cols = 0;
};

std::vector<placement> placements(const sequential<float>& m) {
  std::vector<placement> out;
  const auto& ranges = m.ranges().ranges();
  for (std::size_t i = 0; i < m.layers().size(); ++i) {
    const auto& layer = m.layers()[i];
    auto prefix = m.names()[i] + ".";
    for (const auto& r : ranges) {
      if (r.name.compare(0, prefix.size(), prefix) != 0)
        continue;
      placement p;
      p.name = std::to_string(i) + "." + to_string(r.kind);
      p.offset = r.offset;
      p.size = r.size;
      p.shape = {r.size};
      if (r.kind == range_kind::weight) {
        if (auto* d = dynamic_cast<const dense<float>*>(layer.get())) {
          p.rows = static_cast<std::size_t>(d->out_features());
          p.cols = static_cast<std::size_t>(d->in_features());
          p.shape = {p.rows, p.cols};
        } else if (auto* c = dynamic_cast<const conv2d<float>*>(layer.get())) {
          std::uint64_t out_c = c->options().out_channels;
          std::uint64_t k = c->options().kernel;
          p.shape = {out_c, r.size / (out_c * k * k), k, k};
        }
      }
      out.push_back(std::move(p));
    }
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

} // namespace

std::vector<tensor_data> model_tensors(const sequential<float>& m) {
  std::vector<tensor_data> out;
  const float* flat = m.params();
  for (const auto& p : placements(m)) {
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
  meta["troupe.classes"] = std::to_string(m.output_shape().size());
  meta["troupe.options"] = info.options.empty() ? "{}" : info.options;
  meta["troupe.version"] = info.version;
  meta["troupe.input_scaling"]
      = nlohmann::json({{"mean", info.input_scaling.mean},
                        {"stddev", info.input_scaling.stddev}})
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
  if (!c.is_number_integer() || c.get<std::int64_t>() < 1
      || c.get<std::int64_t>() > (1 << 20))
    throw data_error(named("troupe.classes") + " is " + quote(*classes)
                     + ", not a count in 1..2^20");
  info.classes = c.get<int>();
  if (auto* o = entry("troupe.options")) {
    if (!parse_json(*o, named("troupe.options")).is_object())
      throw data_error(named("troupe.options") + " is not a JSON object");
    info.options = *o;
  }
  if (auto* v = entry("troupe.version"))
    info.version = *v;
  if (auto* sc = entry("troupe.input_scaling")) {
    auto j = parse_json(*sc, named("troupe.input_scaling"));
    auto finite = [&](const char* key) {
      return j.is_object() && j.contains(key) && j[key].is_number()
             && std::isfinite(j[key].get<double>());
    };
    if (!finite("mean") || !finite("stddev")
        || !(j["stddev"].get<double>() > 0))
      throw data_error(named("troupe.input_scaling") + " is " + quote(*sc)
                       + ", not {\"mean\": x, \"stddev\": y > 0}");
    info.input_scaling.mean = static_cast<float>(j["mean"].get<double>());
    info.input_scaling.stddev = static_cast<float>(j["stddev"].get<double>());
  }
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
    float* flat = m.params() + p.offset;
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

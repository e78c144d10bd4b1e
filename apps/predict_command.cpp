#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "apps/cli.hpp"
#include "apps/model_commands.hpp"
#include "optim/detail/gz_file.hpp"

namespace troupe::apps {

namespace {

/// An IDX images file (magic 0x00000803, gzip or not) as columns of pixels
/// in [0, 1]; nullopt if the file does not start with that magic.
std::optional<optim::matrix<float>> read_idx_images(const std::string& path,
                                                    const optim::shape& want) {
  optim::detail::gz_file f{path};
  unsigned char head[16];
  auto got = f.read(head, 4);
  auto be = [&](int i) {
    return (std::uint32_t{head[i]} << 24) | (std::uint32_t{head[i + 1]} << 16)
           | (std::uint32_t{head[i + 2]} << 8) | std::uint32_t{head[i + 3]};
  };
  if (got < 4 || be(0) != 0x00000803)
    return std::nullopt;
  if (f.read(head + 4, 12) < 12)
    throw optim::data_error(path + ": truncated IDX header");
  std::uint32_t n = be(4), h = be(8), w = be(12);
  if (want.c != 1 || h != static_cast<std::uint32_t>(want.h)
      || w != static_cast<std::uint32_t>(want.w))
    throw optim::data_error(
        path + ": images of " + std::to_string(h) + "x" + std::to_string(w)
        + ", the model takes [" + std::to_string(want.c) + ", "
        + std::to_string(want.h) + ", " + std::to_string(want.w) + "]");
  // Image by image: nothing is allocated for images the file does not hold.
  std::vector<unsigned char> pixels, one(static_cast<std::size_t>(h) * w);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (f.read(one.data(), one.size()) < one.size())
      throw optim::data_error(path + ": truncated: image " + std::to_string(i)
                              + " of " + std::to_string(n) + " is cut short");
    pixels.insert(pixels.end(), one.begin(), one.end());
  }
  optim::matrix<float> x(static_cast<Eigen::Index>(one.size()),
                         static_cast<Eigen::Index>(n));
  std::transform(pixels.begin(), pixels.end(), x.data(), [](unsigned char v) {
    return static_cast<float>(v) / 255.0f;
  });
  return x;
}

/// Standard input copied to a file the readers can open.
struct stdin_file {
  std::string path = (std::filesystem::temp_directory_path()
                      / ("troupe-predict-" + std::to_string(::getpid())))
                         .string();
  stdin_file() {
    std::ofstream out{path, std::ios::binary};
    out << std::cin.rdbuf();
    if (!out)
      throw std::runtime_error("cannot copy standard input to " + path);
  }
  ~stdin_file() {
    std::remove(path.c_str());
  }
};

} // namespace

int predict_main(const std::vector<std::string>& args) {
  std::string model_path, input;
  std::uint64_t top = 1, batch = 256;
  bool json = false;
  option_parser p{"troupe predict"};
  p.add(model_path, "model", "FILE: a model saved by troupe train --save")
      .add(input, "input",
           "FILE: IDX images (gzip or not) or a libsvm file (labels "
           "ignored); - reads libsvm from standard input")
      .add(top, "top", "print the K most probable classes (default 1)")
      .add(batch, "batch", "examples per forward pass (default 256)")
      .add(json, "json", "one JSON object per example instead of text");
  return guarded_main("troupe predict", [&] {
    if (!p.parse(args))
      return 0;
    if (input.empty())
      throw usage_error("troupe predict: --input=FILE is required (IDX "
                        "images, libsvm, or - for libsvm on standard input)");
    auto loaded = load_model_flag("troupe predict", model_path);
    auto& m = loaded.model;
    auto classes = static_cast<std::uint64_t>(loaded.info.classes);
    if (top == 0 || top > classes)
      throw usage_error("troupe predict: --top must be in 1.."
                        + std::to_string(classes) + " (the model's classes)");
    if (batch == 0)
      throw usage_error("troupe predict: --batch must be at least 1");
    std::error_code ec;
    if (input != "-" && !std::filesystem::exists(input, ec))
      throw usage_error("troupe predict: --input=" + input + ": no such file");
    std::unique_ptr<stdin_file> piped;
    auto path = input;
    if (input == "-") {
      piped = std::make_unique<stdin_file>();
      path = piped->path;
    }
    auto features = loaded.info.sample_shape.size();
    optim::matrix<float> x;
    try {
      if (auto images = read_idx_images(path, loaded.info.sample_shape)) {
        x = std::move(*images);
      } else {
        auto d = optim::read_libsvm(path, features);
        if (static_cast<std::size_t>(d.x.rows()) != features)
          throw optim::data_error(
              input + ": examples of " + std::to_string(d.x.rows())
              + " features, the model takes " + std::to_string(features));
        x = std::move(d.x);
      }
    } catch (const optim::data_error& e) {
      // Standard input's copy is named as such.
      std::string what = e.what();
      if (piped && what.rfind(path, 0) == 0)
        throw optim::data_error("standard input" + what.substr(path.size()));
      throw;
    }
    scale_inputs(x, loaded.info.input_scaling);
    optim::matrix<float> chunk;
    std::vector<std::size_t> order(classes);
    for (Eigen::Index first = 0; first < x.cols();
         first += static_cast<Eigen::Index>(batch)) {
      auto n = std::min<Eigen::Index>(static_cast<Eigen::Index>(batch),
                                      x.cols() - first);
      chunk = x.middleCols(first, n);
      const auto& logits = m.forward(chunk);
      for (Eigen::Index j = 0; j < n; ++j) {
        // Softmax in double, the largest logit subtracted first.
        auto col = logits.col(j).cast<double>();
        double peak = col.maxCoeff();
        Eigen::VectorXd prob = (col.array() - peak).exp();
        prob /= prob.sum();
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::partial_sort(order.begin(),
                          order.begin() + static_cast<std::ptrdiff_t>(top),
                          order.end(), [&](std::size_t a, std::size_t b) {
                            return prob(static_cast<Eigen::Index>(a))
                                   > prob(static_cast<Eigen::Index>(b));
                          });
        auto index = first + j;
        if (json) {
          auto best = nlohmann::json::array();
          for (std::size_t k = 0; k < top; ++k)
            best.push_back(
                {{"class", order[k]},
                 {"probability", prob(static_cast<Eigen::Index>(order[k]))}});
          std::cout << nlohmann::json{{"index", index}, {"top", best}}.dump()
                    << '\n';
        } else {
          std::cout << index;
          for (std::size_t k = 0; k < top; ++k)
            std::cout << ' ' << order[k] << ' '
                      << prob(static_cast<Eigen::Index>(order[k]));
          std::cout << '\n';
        }
      }
    }
    std::cout << std::flush;
    std::cerr << "troupe predict: " << x.cols() << " examples\n";
    return 0;
  });
}

} // namespace troupe::apps

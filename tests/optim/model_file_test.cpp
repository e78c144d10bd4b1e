// Models saved as safetensors: the round trip is bit-exact (non-finite
// weights included), the file is the format's (8-byte length, JSON padded to
// a multiple of 8, F32 data back to back in PyTorch's layout), and every
// malformed or mismatched file is refused naming the file and the tensor.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "optim/model_file.hpp"
#include "optim/model_spec.hpp"

using namespace troupe::optim;

namespace {

const std::string file = "test.safetensors";

sequential<float> built(const std::string& name, std::uint64_t seed) {
  auto m = make_model<float>(name, shape{1, 28, 28}, 10);
  m.init(seed);
  return m;
}

model_info info_of(const std::string& name) {
  model_info info;
  info.model = name;
  info.options = R"({"algo":"sgd","lr":0.05})";
  info.version = "0.test";
  info.input_scaling = {0.2860402f, 0.3530239f};
  return info;
}

/// A file from a header given as JSON and `data_bytes` bytes of data.
std::string raw(const nlohmann::json& header, std::size_t data_bytes) {
  auto text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  auto n = static_cast<std::uint64_t>(text.size());
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + text + std::string(data_bytes, '\x01');
}

nlohmann::json entry(std::vector<std::uint64_t> shape, std::uint64_t begin,
                     std::uint64_t end, const std::string& dtype = "F32") {
  return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

std::string refusal(std::string_view bytes) {
  auto m = make_model<float>("logreg", shape{1, 2, 2}, 3);
  try {
    decode_params(bytes, file, m);
  } catch (const data_error& e) {
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("a saved model reads back bit for bit, metadata included") {
  const std::uint64_t seed = GENERATE(1, 77);
  const std::string name = GENERATE("logreg", "mlp", "lenet");
  std::cout << "model " << name << ", seed " << seed << std::endl;
  auto m = built(name, seed);
  // Non-finite weights are saved as they are.
  m.params()[3] = std::numeric_limits<float>::quiet_NaN();
  m.params()[m.size() - 1] = -std::numeric_limits<float>::infinity();
  auto bytes = encode_model(m, info_of(name));
  auto loaded = decode_model(bytes, file);
  REQUIRE(loaded.model.size() == m.size());
  CHECK(std::memcmp(loaded.model.params(), m.params(), m.size() * 4) == 0);
  CHECK(loaded.info.model == name);
  CHECK(loaded.info.sample_shape == shape{1, 28, 28});
  CHECK(loaded.info.classes == 10);
  CHECK(loaded.info.options == info_of(name).options);
  CHECK(loaded.info.version == "0.test");
  CHECK(loaded.info.input_scaling.mean == 0.2860402f);
  CHECK(loaded.info.input_scaling.stddev == 0.3530239f);
  // The same model encodes to the same bytes.
  CHECK(encode_model(loaded.model, loaded.info) == bytes);
}

TEST_CASE("the file is safetensors with PyTorch's names, shapes and layout") {
  std::cout << "seed 5" << std::endl;
  auto m = built("mlp", 5);
  auto bytes = encode_model(m, info_of("mlp"));
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8)
        | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  CHECK(n % 8 == 0);
  CHECK(bytes[8] == '{');
  auto h = parse_safetensors(bytes, file);
  CHECK(h.data_start == 8 + n);
  std::vector<std::string> names;
  for (const auto& t : h.tensors)
    names.push_back(t.name);
  CHECK(names
        == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias",
                                    "4.weight", "4.bias"});
  CHECK(h.tensors[0].shape == std::vector<std::uint64_t>{256, 784});
  CHECK(h.tensors[1].shape == std::vector<std::uint64_t>{256});
  CHECK(h.tensors[4].shape == std::vector<std::uint64_t>{10, 128});
  CHECK(bytes.size() == h.data_start + 4 * m.size());
  // "0.weight"[o][i] is the dense layer's W(o, i), stored column-major.
  std::vector<float> w(256 * 784);
  read_f32(bytes, h, h.tensors[0], w.data());
  for (std::size_t o : {0, 7, 255})
    for (std::size_t i : {0, 100, 783})
      CHECK(w[o * 784 + i] == m.params()[o + i * 256]);
  auto lenet = built("lenet", 5);
  auto hl = parse_safetensors(encode_model(lenet, info_of("lenet")), file);
  CHECK(hl.tensors[0].name == "0.weight");
  CHECK(hl.tensors[0].shape == std::vector<std::uint64_t>{6, 1, 5, 5});
  CHECK(hl.tensors[2].name == "3.weight");
  CHECK(hl.tensors[2].shape == std::vector<std::uint64_t>{16, 6, 5, 5});
  CHECK(hl.tensors[4].name == "7.weight");
  CHECK(hl.tensors[4].shape == std::vector<std::uint64_t>{120, 400});
}

TEST_CASE("a model that does not match is refused naming the tensor") {
  std::cout << "seed 3" << std::endl;
  auto mlp = built("mlp", 3);
  auto tensors = model_tensors(mlp);
  auto target = built("mlp", 4);
  auto before
      = std::vector<float>(target.params(), target.params() + target.size());
  auto refused = [&](const std::vector<tensor_data>& ts) -> std::string {
    try {
      decode_params(encode_safetensors(ts, {}), file, target);
    } catch (const data_error& e) {
      return e.what();
    }
    return "accepted";
  };
  auto missing = tensors;
  missing.pop_back();
  CHECK_THAT(refused(missing),
             Catch::StartsWith(file) && Catch::Contains("'4.bias' is missing"));
  auto extra = tensors;
  extra.push_back({"9.weight", {2}, {1, 2}});
  CHECK_THAT(refused(extra),
             Catch::Contains("'9.weight' is not a parameter of the model"));
  auto logreg = model_tensors(built("logreg", 3));
  CHECK_THAT(refused(logreg),
             Catch::Contains("tensor '0.weight' has shape [10,784], the "
                             "model's is [256,784]"));
  // A refused file leaves the model as it was.
  CHECK(std::equal(before.begin(), before.end(), target.params()));
  // --init's check in one call: a lenet file for an mlp.
  CHECK_THAT(refused(model_tensors(built("lenet", 3))),
             Catch::Contains("0.weight' has shape [6,1,5,5]"));
}

TEST_CASE("a malformed file is refused naming the file and the tensor") {
  nlohmann::json ok{{"0.weight", entry({3, 4}, 0, 48)},
                    {"0.bias", entry({3}, 48, 60)}};
  CHECK(refusal(raw(ok, 60)) == "accepted");
  auto f16 = ok;
  f16["0.bias"]["dtype"] = "F16";
  CHECK_THAT(refusal(raw(f16, 60)),
             Catch::StartsWith(file)
                 && Catch::Contains("tensor '0.bias': dtype 'F16'"));
  auto past = ok;
  past["0.bias"] = entry({3}, 48, 60);
  CHECK_THAT(
      refusal(raw(past, 56)),
      Catch::Contains("truncated: tensor '0.bias' ends at data byte 60"));
  auto overlap = ok;
  overlap["0.bias"] = entry({3}, 40, 52);
  CHECK_THAT(refusal(raw(overlap, 60)),
             Catch::Contains("tensor '0.bias': data_offsets [40, 52] overlap"));
  auto gap = ok;
  gap["0.bias"] = entry({3}, 52, 64);
  CHECK_THAT(refusal(raw(gap, 64)),
             Catch::Contains("tensor '0.bias': data_offsets [52, 64] leave "
                             "bytes [48, 52)"));
  CHECK_THAT(refusal(raw(ok, 64)),
             Catch::Contains("4 bytes after the last tensor's data"));
  auto wrong_size = ok;
  wrong_size["0.weight"] = entry({3, 5}, 0, 48);
  CHECK_THAT(refusal(raw(wrong_size, 60)),
             Catch::Contains("tensor '0.weight': shape [3, 5] needs 60 bytes"));
  auto huge = ok;
  huge["0.weight"]["shape"] = {std::uint64_t{1} << 40, std::uint64_t{1} << 40};
  CHECK_THAT(refusal(raw(huge, 60)), Catch::Contains("more than 2^64"));
  auto negative = ok;
  negative["0.weight"]["shape"] = {-3, 4};
  CHECK_THAT(refusal(raw(negative, 60)),
             Catch::Contains("tensor '0.weight': a dimension is -3"));
  auto no_offsets = ok;
  no_offsets["0.bias"].erase("data_offsets");
  CHECK_THAT(refusal(raw(no_offsets, 60)),
             Catch::Contains("tensor '0.bias': no data_offsets"));
  auto meta = ok;
  meta["__metadata__"] = {{"troupe.classes", 3}};
  CHECK_THAT(refusal(raw(meta, 60)),
             Catch::Contains("metadata 'troupe.classes' is 3, not a string"));
  // A whole file cut short names the tensor it cuts.
  auto good = raw(ok, 60);
  CHECK_THAT(refusal(good.substr(0, good.size() - 5)),
             Catch::Contains("truncated: tensor '0.bias'"));
}

TEST_CASE("an untrusted header length or header is checked first") {
  CHECK_THAT(refusal("abc"), Catch::Contains(file + ": truncated: 3 bytes"));
  std::string big(16, '\0');
  big[4] = '\x01'; // 2^32 bytes: over the cap
  CHECK_THAT(refusal(big), Catch::Contains("exceeds the limit"));
  std::string past(16, ' ');
  past.replace(0, 8, std::string("\x40\0\0\0\0\0\0\0", 8)); // 64 > 8 left
  CHECK_THAT(refusal(past), Catch::Contains("runs past the end of the file"));
  std::string bad = std::string("\x08\0\0\0\0\0\0\0", 8) + "{\"a\":   ";
  CHECK_THAT(refusal(bad), Catch::Contains("invalid JSON header"));
  std::string deep
      = "{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}";
  deep.append((8 - deep.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  len[0] = static_cast<char>(deep.size());
  CHECK_THAT(refusal(len + deep), Catch::Contains("nested deeper"));
}

TEST_CASE("save_model and load_model go through a file") {
  std::cout << "seed 9" << std::endl;
  auto dir = std::filesystem::temp_directory_path()
             / ("troupe_model_file_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "m.safetensors").string();
  auto m = built("logreg", 9);
  save_model(path, m, info_of("logreg"));
  auto loaded = load_model(path);
  CHECK(std::memcmp(loaded.model.params(), m.params(), m.size() * 4) == 0);
  CHECK_THROWS_WITH(load_model((dir / "none").string()),
                    Catch::StartsWith((dir / "none").string()));
  CHECK_THROWS_WITH(save_model((dir / "no/such/dir/m").string(), m, {}),
                    Catch::Contains("no/such/dir/m"));
  auto bytes = read_model_file(path);
  auto info = info_of("logreg");
  info.model = "resnet";
  auto other = encode_model(m, info);
  CHECK_THROWS_WITH(decode_model(other, file),
                    Catch::Contains("cannot rebuild the model: unknown model"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a per-feature input scaling reads back; a wrong one is refused") {
  std::cout << "seed 4" << std::endl;
  auto m = make_model<float>("logreg", shape{3, 1, 1}, 2);
  m.init(4);
  auto info = info_of("logreg");
  info.input_scaling = {};
  info.input_scaling.means = {1000.5f, 0.1f, -3};
  info.input_scaling.stddevs = {351.25f, 0.0125f, 1};
  auto bytes = encode_model(m, info);
  auto loaded = decode_model(bytes, file);
  CHECK(loaded.info.input_scaling.per_feature());
  CHECK(loaded.info.input_scaling.means == info.input_scaling.means);
  CHECK(loaded.info.input_scaling.stddevs == info.input_scaling.stddevs);
  CHECK(encode_model(loaded.model, loaded.info) == bytes);
  // Lists of another length than the sample's features, a stddev of 0, a
  // non-number, a value beyond float's range.
  for (const char* text :
       {R"({"mean":[1,2],"stddev":[1,1]})", R"({"mean":[1,2,3],"stddev":1})",
        R"({"mean":[1,2,3],"stddev":[1,0,1]})",
        R"({"mean":[1,"x",3],"stddev":[1,1,1]})",
        R"({"mean":1e300,"stddev":1})"}) {
    INFO(text);
    auto meta = parse_safetensors(bytes, file).metadata;
    meta["troupe.input_scaling"] = text;
    auto tampered = encode_safetensors(model_tensors(m), meta);
    CHECK_THROWS_WITH(
        decode_model_info(tampered, file),
        Catch::StartsWith(file + ": metadata troupe.input_scaling is")
            && Catch::Contains("one per feature: 3"));
  }
}

TEST_CASE("buffers, blocks and every loss survive the round trip") {
  const std::uint64_t seed = 5151;
  std::cout << "model_file_test: layers of [13], seed " << seed << "\n";
  const std::string bn = model_description(
      R"({"name": "bn", "layers": [
            {"type": "conv2d", "out_channels": 2, "kernel": 3, "padding": 1},
            {"type": "batch_norm"},
            {"type": "residual", "layers": [
              {"type": "conv2d", "out_channels": 2, "kernel": 3,
               "padding": 1}, {"type": "relu"}]},
            {"type": "flatten"}, {"type": "dropout", "p": 0.5},
            {"type": "dense", "units": "classes"}]})");
  auto m = make_model<float>(bn, shape{1, 6, 6}, 3);
  m.init(seed);
  rng gen{seed};
  matrix<float> x(36, 8);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    x.data()[i] = static_cast<float>(gen.uniform());
  m.calibrate(x);
  REQUIRE(m.buffer_size() == 4);
  auto info = info_of(bn);
  auto back = decode_model(encode_model(m, info), file);
  REQUIRE(back.model.size() == m.size());
  CHECK(std::memcmp(back.model.params(), m.params(), m.size() * 4) == 0);
  CHECK(std::memcmp(back.model.buffers(), m.buffers(), 16) == 0);
  CHECK(back.info.classes == 3);
  // The tensors: PyTorch's shapes, a block's inner layers by their names.
  std::vector<std::string> names;
  for (const auto& t : model_tensors(m))
    names.push_back(t.name);
  CHECK(names
        == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias",
                                    "2.conv1.weight", "2.conv1.bias",
                                    "5.weight", "5.bias", "1.running_mean",
                                    "1.running_var"});
  CHECK(model_tensors(m)[4].shape == std::vector<std::uint64_t>{2, 2, 3, 3});
  // A regression model stores 0 classes, a binary one 2.
  for (auto [loss, classes] :
       {std::pair<std::string, int>{"mse", 0}, {"binary_cross_entropy", 2}}) {
    auto d = model_description(R"({"loss": ")" + loss + R"(", "layers": [
        {"type": "embedding", "vocabulary": 5, "dim": 2},
        {"type": "dense", "units": "classes"}]})");
    auto r = make_model<float>(d, shape{1, 1, 3}, classes);
    r.init(seed);
    auto again = decode_model(encode_model(r, info_of(d)), file);
    CHECK(again.info.classes == classes);
    CHECK(again.model.loss() == r.loss());
    CHECK(model_tensors(r)[0].shape == std::vector<std::uint64_t>{5, 2});
    CHECK(std::memcmp(again.model.params(), r.params(), r.size() * 4) == 0);
  }
}

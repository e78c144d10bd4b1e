// The state file (optim/state_file.hpp): exact round trips of every element
// type (NaN payloads included), names and metadata, and refusals naming the
// file and the tensor for garbage, truncated files, missing tensors, wrong
// dtypes and wrong sizes; model files still refuse anything but F32.

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>

#include <catch2/catch.hpp>

#include "optim/rng.hpp"
#include "optim/safetensors.hpp"
#include "optim/state_file.hpp"

using namespace troupe::optim;

namespace {

template <class T, class U>
T from_bits(U bits) {
  static_assert(sizeof(T) == sizeof(U));
  T x;
  std::memcpy(&x, &bits, sizeof(T));
  return x;
}

template <class T>
bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size()
         && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

/// A file with one tensor of each kind and two metadata strings.
std::string sample_file() {
  state_writer w;
  w.put("opt.sum", std::vector<float>(12, 1.5f));
  w.put("opt.step", std::vector<double>{0.25, -1});
  w.put_u64("version", 7);
  w.meta("opt.name", "adagrad");
  w.meta("role", "shard 0");
  return w.encode();
}

} // namespace

TEST_CASE("a state file round-trips every value bit for bit") {
  std::uint64_t seed = 41;
  std::cout << "state round trip seed " << seed << '\n';
  rng gen{seed};
  std::vector<float> f32{0.0f,
                         -0.0f,
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::denorm_min(),
                         std::numeric_limits<float>::max(),
                         from_bits<float>(std::uint32_t{0x7fc00001}),
                         from_bits<float>(std::uint32_t{0xff800123}),
                         from_bits<float>(std::uint32_t{0x7f812345})};
  for (int i = 0; i < 100; ++i)
    f32.push_back(static_cast<float>(gen.normal()));
  std::vector<double> f64{-0.0,
                          std::numeric_limits<double>::quiet_NaN(),
                          from_bits<double>(std::uint64_t{0x7ff0000000000001}),
                          from_bits<double>(std::uint64_t{0xfff8dead0000beef}),
                          std::numeric_limits<double>::denorm_min(),
                          1.0 / 3};
  std::vector<std::uint64_t> u64{
      0, 1, std::numeric_limits<std::uint64_t>::max(), 0x0102030405060708};
  state_writer w;
  w.put("a.f32", f32);
  w.put("a.f64", f64);
  w.put("a.u64", u64);
  w.put("a.empty", std::vector<float>{});
  w.put_u64("a.count", 1234567890123456789ull);
  w.put_f64("a.rate", from_bits<double>(std::uint64_t{0x7ff4000000000abc}));
  w.meta("a.name", "momentum \"quoted\" \xc3\xa9");
  state_reader r{w.encode(), "ckpt/state.safetensors"};
  CHECK(r.file() == "ckpt/state.safetensors");
  CHECK(same_bits(r.f32("a.f32"), f32));
  CHECK(same_bits(r.f64("a.f64"), f64));
  CHECK(r.u64("a.u64") == u64);
  CHECK(r.f32("a.empty").empty());
  CHECK(r.u64_scalar("a.count") == 1234567890123456789ull);
  auto rate = r.f64_scalar("a.rate");
  CHECK(std::memcmp(&rate, "\xbc\x0a\x00\x00\x00\x00\xf4\x7f", 8) == 0);
  CHECK(r.meta("a.name") == "momentum \"quoted\" \xc3\xa9");
  std::vector<float> into(f32.size());
  r.f32("a.f32", into.data(), into.size());
  CHECK(same_bits(into, f32));
  CHECK(r.has("a.f64"));
  CHECK_FALSE(r.has("a.f6"));
  // The blocks are little-endian: u64 1 is the bytes 01 00 .. 00.
  auto bytes = w.encode();
  auto one = std::string("\x01\0\0\0\0\0\0\0", 8);
  auto max = std::string(8, '\xff');
  CHECK(bytes.find(one + max) != std::string::npos);
}

TEST_CASE("a state writer refuses a name or metadata key given twice") {
  state_writer w;
  w.put_u64("x", 1);
  CHECK_THROWS_AS(w.put_f64("x", 1.0), std::invalid_argument);
  CHECK_THROWS_AS(w.put("__metadata__", std::vector<float>{1}),
                  std::invalid_argument);
  w.meta("k", "v");
  CHECK_THROWS_AS(w.meta("k", "w"), std::invalid_argument);
}

TEST_CASE("a state reader names the file and the tensor it cannot use") {
  state_reader r{sample_file(), "ckpt/shard-0.state"};
  auto fails = [](auto&& f, const std::string& what) {
    CHECK_THROWS_WITH(f(), Catch::Contains(what));
    CHECK_THROWS_AS(f(), data_error);
  };
  fails([&] { r.f32("opt.acc"); }, "ckpt/shard-0.state: no tensor 'opt.acc'");
  fails([&] { r.f64("opt.sum"); },
        "ckpt/shard-0.state: tensor 'opt.sum': dtype F32, expected F64");
  fails([&] { r.u64_scalar("opt.step"); },
        "tensor 'opt.step': dtype F64, expected U64");
  std::vector<float> out(10);
  fails([&] { r.f32("opt.sum", out.data(), out.size()); },
        "ckpt/shard-0.state: tensor 'opt.sum' has 12 values, expected 10");
  fails([&] { r.f64_scalar("opt.step"); },
        "tensor 'opt.step' has 2 values, expected 1");
  fails([&] { r.meta("opt.beta1"); }, "no metadata 'opt.beta1'");
  fails([&] { r.expect_meta("opt.name", "adam"); },
        "ckpt/shard-0.state: 'opt.name' is 'adagrad' in the file, 'adam' "
        "here");
  fails([&] { r.expect_u64("version", 8); },
        "tensor 'version' is 7 in the file, 8 here");
  CHECK_NOTHROW(r.expect_u64("version", 7));
}

TEST_CASE("garbage and truncated state files are refused naming the file") {
  std::uint64_t seed = 43;
  std::cout << "garbage state seed " << seed << '\n';
  auto good = sample_file();
  for (std::size_t n = 0; n < good.size(); ++n)
    CHECK_THROWS_WITH(state_reader(good.substr(0, n), "cut.state"),
                      Catch::StartsWith("cut.state: "));
  CHECK_THROWS_AS(state_reader(good + "x", "long.state"), data_error);
  rng gen{seed};
  for (int i = 0; i < 200; ++i) {
    auto bytes = good;
    auto at = static_cast<std::size_t>(gen.below(bytes.size()));
    bytes[at] = static_cast<char>(gen.below(256));
    // A flipped byte is refused or read; it never crashes or hangs.
    try {
      state_reader r{bytes, "flip.state"};
      (void)r.has("opt.sum");
    } catch (const data_error& e) {
      CHECK(std::string{e.what()}.rfind("flip.state: ", 0) == 0);
    }
  }
  std::string junk(64, '\0');
  for (auto& c : junk)
    c = static_cast<char>(gen.below(256));
  CHECK_THROWS_AS(state_reader(junk, "junk.state"), data_error);
}

TEST_CASE("model files still hold F32 only; state files also F64 and U64") {
  state_writer w;
  w.put("0.weight", std::vector<double>{1, 2});
  auto bytes = w.encode();
  CHECK_THROWS_WITH(parse_safetensors(bytes, "m.safetensors"),
                    Catch::Contains("m.safetensors: tensor '0.weight': dtype "
                                    "'F64'; troupe reads F32 only"));
  CHECK_THROWS_WITH(parse_safetensors(bytes, "s", {"F32", "U64"}),
                    Catch::Contains("troupe reads F32 or U64 only"));
  auto h = parse_safetensors(bytes, "s", {"F32", "F64", "U64", "I64"});
  REQUIRE(h.tensors.size() == 1);
  CHECK(h.tensors[0].dtype == "F64");
  CHECK(h.tensors[0].end - h.tensors[0].begin == 16);
  CHECK(dtype_size("F32") == 4);
  CHECK(dtype_size("I64") == 8);
  CHECK(dtype_size("BF16") == 0);
  CHECK_THROWS_AS(
      encode_safetensors(std::vector<raw_tensor>{{"x", "F16", {1}, "ab"}}, {}),
      std::invalid_argument);
  CHECK_THROWS_AS(
      encode_safetensors(std::vector<raw_tensor>{{"x", "F64", {2}, "12345678"}},
                         {}),
      std::invalid_argument);
}

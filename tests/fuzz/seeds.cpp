// Writes the seed corpora of tests/fuzz/corpus/ from the real encoders, so
// they follow the wire and file formats: `fuzz_seeds DIR` fills
// DIR/<target>/ with a few small valid inputs per fuzz target. Run it again
// (scripts/fuzz --seeds) after a format changes.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/io/basp/message_type.hpp>
#include <caf/make_message.hpp>
#include <zlib.h>

#include "algos/downpour/downpour.hpp"
#include "apps/train_command.hpp"
#include "messages/atoms.hpp"
#include "messages/compressed.hpp"
#include "messages/messages.hpp"
#include "messages/registry.hpp"
#include "optim/compress.hpp"
#include "optim/model_file.hpp"
#include "tests/fuzz/state_seed.hpp"

namespace fs = std::filesystem;
using namespace troupe;

namespace {

fs::path root;

void put(const std::string& target, const std::string& name,
         const std::string& bytes) {
  auto dir = root / target;
  fs::create_directories(dir);
  std::ofstream out{dir / name, std::ios::binary | std::ios::trunc};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
std::string serialize(caf::actor_system& sys, T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(x)) {
    std::cerr << "cannot serialize: " << sys.render(err) << '\n';
    std::exit(1);
  }
  return {buf.begin(), buf.end()};
}

std::string gzip(const std::string& plain) {
  auto path = (root / "tmp.gz").string();
  auto* f = gzopen(path.c_str(), "wb");
  gzwrite(f, plain.data(), static_cast<unsigned>(plain.size()));
  gzclose(f);
  std::ifstream in{path, std::ios::binary};
  std::string out{std::istreambuf_iterator<char>{in}, {}};
  fs::remove(path);
  return out;
}

std::string be32(std::uint32_t x) {
  return {static_cast<char>(x >> 24), static_cast<char>(x >> 16),
          static_cast<char>(x >> 8), static_cast<char>(x)};
}

void wire_seeds(caf::actor_system& sys) {
  for (std::vector<float> v : {std::vector<float>{},
                               {1.5f, -2.0f, 0.0f},
                               std::vector<float>(16, 0.25f)}) {
    messages::tensor t{v};
    put("tensor", "size" + std::to_string(v.size()), serialize(sys, t));
  }
  std::vector<float> g(64);
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<float>(i % 7) - 3.0f;
  for (auto c :
       {optim::codec::adacomp, optim::codec::topk, optim::codec::onebit}) {
    optim::compress_options o;
    o.method = c;
    o.bin_fc = 8;
    o.density_fc = 0.25;
    optim::compressor comp{
        o, {{0, 48, optim::layer_kind::fc}, {48, 16, optim::layer_kind::conv}}};
    messages::compressed_push_msg m;
    m.worker = 1;
    m.seq = 2;
    m.size = g.size();
    m.packed = comp.compress(g.data(), g.size());
    put("compressed", optim::to_string(c), serialize(sys, m));
  }
  messages::hello_msg hello;
  hello.node = "host:1234";
  hello.worker_slots = 2;
  hello.heartbeat_ms = 1000;
  hello.timeout_ms = 10000;
  put("hello", "hello", std::string(1, '\0') + serialize(sys, hello));
  hello.token = "secret-join-token";
  put("hello", "hello_token", std::string(1, '\0') + serialize(sys, hello));
  auto join
      = caf::make_message(messages::join_atom::value, hello, caf::actor{});
  put("hello", "join_message", std::string(1, '\1') + serialize(sys, join));
  auto members = caf::make_message(messages::members_atom::value);
  put("hello", "members_message",
      std::string(1, '\1') + serialize(sys, members));
}

void guard_seeds() {
  using op = caf::io::basp::message_type;
  auto header = [](op o, std::uint32_t len, bool first, std::uint32_t limit) {
    std::string h(32, '\0');
    h[0] = static_cast<char>(o);
    h.replace(4, 4, be32(len));
    h += static_cast<char>(first ? 1 : 0);
    h += std::string{static_cast<char>(limit), static_cast<char>(limit >> 8),
                     static_cast<char>(limit >> 16),
                     static_cast<char>(limit >> 24)};
    return h;
  };
  put("guard", "handshake", header(op::client_handshake, 120, true, 1 << 30));
  put("guard", "direct", header(op::direct_message, 4096, false, 1 << 30));
  put("guard", "heartbeat", header(op::heartbeat, 0, false, 1 << 20));
  put("guard", "oversized", header(op::direct_message, 1u << 31, false, 1024));
}

void file_seeds() {
  apps::train_options o;
  put("job_spec", "default", apps::to_spec(o));
  o.algo = "downpour";
  o.workers = 4;
  troupe::apps::algorithm_options<troupe::algos::downpour>(o)
      .compression_settings.compress
      = "topk";
  o.lr = 0.05;
  put("job_spec", "downpour", apps::to_spec(o));
  put("config", "basic",
      "# a comment\nalgo = downpour\nworkers = 2\n"
      "lr = 0.1\nstandardize = false\n");
  put("config", "section", "[train]\nmodel = logreg\nepochs = 1.5\n");
  put("libsvm", "classes",
      std::string(1, '\x03') + "1 1:0.5 3:-1\n-1 2:2 # comment\n+1 4:1e-3\n");
  put("libsvm", "regression", std::string(1, '\x01') + "0.25 1:1\n-3.5 1:2\n");
  put("csv", "classes",
      std::string(1, '\x00') + "a, b ,label\r\n1,2.5,0\r\n-3,4e-3,1\r\n");
  put("csv", "named", std::string(1, '\x01') + "\"a\",b,c\n1,7,2\n\n3,-1,4");
  put("csv", "regression",
      std::string(1, '\x00') + "x,target\n1,0.25\n2,-3.5\n");
  // IDX: 3 images of 2x2 and their labels (the split is the images' size).
  std::string images = be32(0x803) + be32(3) + be32(2) + be32(2);
  for (int i = 0; i < 12; ++i)
    images += static_cast<char>(i * 20);
  std::string labels = be32(0x801) + be32(3) + std::string{"\0\1\2", 3};
  auto pair = [&](int classes, const std::string& a, const std::string& b) {
    return std::string{static_cast<char>(classes),
                       static_cast<char>(a.size() & 0xFF),
                       static_cast<char>(a.size() >> 8)}
           + a + b;
  };
  put("idx", "plain", pair(0, images, labels));
  put("idx", "gzip", pair(10, gzip(images), gzip(labels)));
  // Models: a small logistic regression, with and without scaling.
  auto logreg = optim::make_model<float>("logreg", {1, 2, 2}, 3);
  logreg.init(1);
  optim::model_info info;
  info.model = "logreg";
  info.options = R"({"algo":"sgd"})";
  info.version = "seed";
  put("model", "logreg", optim::encode_model(logreg, info));
  info.input_scaling = {0.25f, 2.0f};
  info.metadata["troupe.eval_batch"] = "64";
  put("model", "scaled", optim::encode_model(logreg, info));
  // A checkpoint's state: a shard store and a batch iterator mid-run.
  put("state", "shard_and_batches", fuzz::seed_state());
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seeds DIR\n";
    return 2;
  }
  root = argv[1];
  caf::actor_system_config cfg;
  messages::register_types(cfg);
  caf::actor_system sys{cfg};
  wire_seeds(sys);
  guard_seeds();
  file_seeds();
  return 0;
}

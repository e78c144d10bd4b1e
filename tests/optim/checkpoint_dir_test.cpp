// Checkpoint directories: a checkpoint exists once its manifest is written;
// damaged or half-written ones are skipped; rotation keeps the latest N.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "optim/atomic_file.hpp"
#include "optim/checkpoint_dir.hpp"
#include "optim/dataset.hpp"

using namespace troupe::optim;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path;
  temp_dir() {
    path = fs::temp_directory_path()
           / ("troupe_ckpt_" + std::to_string(::getpid()) + "_"
              + std::to_string(counter++));
    fs::remove_all(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const {
    return path.string();
  }
  static inline int counter = 0;
};

checkpoint_content content(std::uint64_t step) {
  checkpoint_content c;
  c.step = step;
  c.job = R"({"algo":"sgd"})";
  c.info = "{\"step\":" + std::to_string(step) + "}";
  std::string binary(1000, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i)
    binary[i] = static_cast<char>(i * 7 + step);
  c.files["shard-0.state"] = binary;
  c.files["worker-0.state"] = "w" + std::to_string(step);
  c.files["empty"] = "";
  return c;
}

void overwrite(const fs::path& p, const std::string& bytes) {
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out << bytes;
}

} // namespace

TEST_CASE("a written checkpoint reads back whole") {
  temp_dir d;
  CHECK_THROWS_WITH(latest_checkpoint(d.str()),
                    Catch::Contains("no such directory"));
  auto c = content(40);
  auto path = write_checkpoint(d.str(), c, 3);
  CHECK(fs::path{path}.filename() == "step-000000000040");
  auto back = latest_checkpoint(d.str());
  REQUIRE(back);
  CHECK(back->step == 40);
  CHECK(back->job == c.job);
  CHECK(back->info == c.info);
  CHECK(back->files == c.files);
  // No temporary file is left behind.
  for (const auto& e : fs::recursive_directory_iterator{d.path})
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("rotation keeps the latest N complete checkpoints") {
  temp_dir d;
  for (std::uint64_t s : {10, 20, 30, 40, 50})
    write_checkpoint(d.str(), content(s), 2);
  CHECK(checkpoint_steps(d.str()) == std::vector<std::uint64_t>{40, 50});
  write_checkpoint(d.str(), content(60), 1);
  CHECK(checkpoint_steps(d.str()) == std::vector<std::uint64_t>{60});
  CHECK_THROWS_AS(write_checkpoint(d.str(), content(70), 0),
                  std::invalid_argument);
}

TEST_CASE("a checkpoint without its manifest or with damaged files does not "
          "count") {
  temp_dir d;
  write_checkpoint(d.str(), content(10), 5);
  write_checkpoint(d.str(), content(20), 5);
  auto latest = d.path / "step-000000000020";

  SECTION("a writer killed before the manifest") {
    fs::remove(latest / checkpoint_manifest);
    std::vector<std::string> skipped;
    auto back = latest_checkpoint(d.str(), &skipped);
    REQUIRE(back);
    CHECK(back->step == 10);
    REQUIRE(skipped.size() == 1);
    CHECK_THAT(skipped[0], Catch::Contains("step-000000000020")
                               && Catch::Contains("MANIFEST.json"));
    // The next write removes the incomplete one older than itself.
    write_checkpoint(d.str(), content(30), 5);
    CHECK(!fs::exists(latest));
    CHECK(checkpoint_steps(d.str()) == std::vector<std::uint64_t>{10, 30});
  }
  SECTION("a flipped byte") {
    auto f = latest / "shard-0.state";
    auto bytes = read_whole_file(f.string());
    bytes[500] = static_cast<char>(bytes[500] ^ 1);
    overwrite(f, bytes);
    std::vector<std::string> skipped;
    auto back = latest_checkpoint(d.str(), &skipped);
    REQUIRE(back);
    CHECK(back->step == 10);
    REQUIRE(skipped.size() == 1);
    CHECK_THAT(skipped[0],
               Catch::Contains("shard-0.state") && Catch::Contains("CRC-32"));
  }
  SECTION("a truncated file") {
    overwrite(latest / "worker-0.state", "w");
    std::vector<std::string> skipped;
    CHECK(latest_checkpoint(d.str(), &skipped)->step == 10);
    CHECK_THAT(skipped.at(0), Catch::Contains("worker-0.state")
                                  && Catch::Contains("manifest says"));
  }
  SECTION("a missing file") {
    fs::remove(latest / "empty");
    CHECK(latest_checkpoint(d.str())->step == 10);
  }
  SECTION("a garbled manifest") {
    for (
        const auto* text :
        {"", "[]", "{\"format\":1}", "not json",
         R"({"format":1,"step":21,"job":"","info":"","files":{}})",
         R"({"format":1,"step":20,"job":"","info":"","files":{"../x":{"bytes":0,"crc32":0}}})"}) {
      INFO(text);
      overwrite(latest / checkpoint_manifest, text);
      CHECK(latest_checkpoint(d.str())->step == 10);
    }
  }
  SECTION("nothing complete at all") {
    fs::remove(latest / checkpoint_manifest);
    fs::remove(d.path / "step-000000000010" / checkpoint_manifest);
    CHECK(!latest_checkpoint(d.str()));
    CHECK(checkpoint_steps(d.str()).empty());
  }
  SECTION("other entries are ignored") {
    fs::create_directory(d.path / "step-12");
    fs::create_directory(d.path / "notes");
    overwrite(d.path / "step-000000000099", "a file, not a directory");
    CHECK(latest_checkpoint(d.str())->step == 20);
  }
}

TEST_CASE("role file names must be plain") {
  temp_dir d;
  for (const auto* bad :
       {"../escape", "a/b", "", ".", "..", "MANIFEST.json", "x.tmp.1"}) {
    INFO(bad);
    auto c = content(1);
    c.files[bad] = "x";
    CHECK_THROWS_AS(write_checkpoint(d.str(), c, 1), std::invalid_argument);
  }
  CHECK(!fs::exists(d.path / "escape"));
}

TEST_CASE("write_file_atomic replaces whole files and names the path") {
  temp_dir d;
  fs::create_directories(d.path);
  auto f = (d.path / "a").string();
  write_file_atomic(f, "first");
  write_file_atomic(f, "second");
  CHECK(read_whole_file(f) == "second");
  CHECK_THROWS_WITH(write_file_atomic((d.path / "no/dir/a").string(), "x"),
                    Catch::Contains("no/dir/a"));
  CHECK_THROWS_WITH(read_whole_file(f, 3), Catch::Contains("more than"));
  CHECK_THROWS_AS(read_whole_file(d.str()), data_error);
}

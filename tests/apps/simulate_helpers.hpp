#pragma once

// What the tests of troupe simulate share: running it as the CLI does and
// reading its JSON.

#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "capture.hpp"

namespace troupe::test::simulate {

inline troupe::test::run_result run(std::vector<std::string> args) {
  std::vector<std::string> all{"--model=mlp", "--train-examples=2048",
                               "--progress=none", "--json"};
  if (args.empty() || args[0].rfind("--algo=", 0) != 0)
    all.insert(all.begin(), "--algo=downpour");
  all.insert(all.end(), args.begin(), args.end());
  return troupe::test::run_train_main(std::move(all), true);
}

inline nlohmann::json last(const troupe::test::run_result& r) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto& out = r.out;
  return nlohmann::json::parse(
      out.substr(out.find_last_of('\n', out.size() - 2) + 1));
}

inline double simulated(const nlohmann::json& j) {
  return j["simulation"]["simulated_seconds"].get<double>();
}

/// The training's seconds (without the last evaluation).
inline double training(const nlohmann::json& j) {
  return j["seconds"].get<double>();
}

inline void refused(std::vector<std::string> args, const std::string& says) {
  auto r = run(std::move(args));
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(says));
}

} // namespace troupe::test::simulate

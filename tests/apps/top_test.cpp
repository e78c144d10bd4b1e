// troupe top: one frame of a (fixed) endpoint's data, with the stuck actor
// marked; the token, garbage answers, an unreachable address and bad flags.

#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>

#include "apps/top_command.hpp"
#include "net/http_server.hpp"

using namespace troupe;

namespace {

const char* cluster_json = R"({"job": {"algo": "downpour", "running": true,
  "seconds": 3.5, "steps": 100, "samples": 6400, "loss": 0.5, "accuracy": 0.8125,
  "stuck_after_ms": 3000},
 "nodes": [{"name": "a:1", "state": "up", "last_seen_ms": 10, "actors": 2},
           {"name": "b:2", "state": "unreachable", "last_seen_ms": 5000, "actors": 1}],
 "actors": [
  {"name": "coordinator", "role": "coordinator", "node": "a:1", "state": "ok",
   "activity": "training", "mailbox": 0, "mailbox_max": 2, "messages_in": 100,
   "messages_out": 0, "bytes_in": 3200, "bytes_out": 0, "handler_ms": 1.5,
   "errors": 0, "last_progress_ms": 10, "samples_per_sec": null},
  {"name": "worker 0", "role": "worker", "node": "a:1", "state": "ok",
   "activity": "computing", "mailbox": 0, "mailbox_max": 1, "messages_in": 50,
   "messages_out": 100, "bytes_in": 2097152, "bytes_out": 2097152,
   "handler_ms": 80, "errors": 0, "last_progress_ms": 12, "samples_per_sec": 2100},
  {"name": "worker 1", "role": "worker", "node": "b:2", "state": "stuck",
   "activity": "waiting", "mailbox": 4, "mailbox_max": 4, "messages_in": 20,
   "messages_out": 40, "bytes_in": 1024, "bytes_out": 1024, "handler_ms": 30,
   "errors": 1, "last_progress_ms": 7300, "samples_per_sec": 0}],
 "links": []})";

std::map<std::string, net::http_handler> routes(std::string cluster) {
  return {{"/api/cluster",
           [cluster](const std::string&) {
             return net::http_response{200, "application/json", cluster};
           }},
          {"/api/series", [](const std::string&) {
             return net::http_response{200, "application/json",
                                       R"({"train": [{"samples_per_sec": 1234}],
                                           "evaluations": []})"};
           }}};
}

/// Runs troupe top with `args`; returns its exit status, fills out / err.
int top(std::vector<std::string> args, std::string& out, std::string& err) {
  std::ostringstream o, e;
  auto* old_out = std::cout.rdbuf(o.rdbuf());
  auto* old_err = std::cerr.rdbuf(e.rdbuf());
  int rc = apps::top_main(args);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  out = o.str();
  err = e.str();
  return rc;
}

std::string line_of(const std::string& text, const std::string& name) {
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line))
    if (line.find(name + " ") != std::string::npos)
      return line;
  return "";
}

} // namespace

TEST_CASE("troupe top prints the actors and marks the stuck one") {
  net::http_server server{{}, routes(cluster_json)};
  auto at = "--connect=127.0.0.1:" + std::to_string(server.port());
  std::string out, err;
  REQUIRE(top({at, "--once"}, out, err) == 0);
  INFO(out << err);
  CHECK_THAT(out, Catch::Contains("downpour") && Catch::Contains("0.8125")
                      && Catch::Contains("samples/s 1234")
                      && Catch::Contains("b:2  unreachable"));
  CHECK(line_of(out, "coordinator").rfind("  coordinator", 0) == 0);
  CHECK(line_of(out, "worker 0").find("2.0 MiB") != std::string::npos);
  CHECK(line_of(out, "worker 1").rfind("! worker 1", 0) == 0);
  CHECK_THAT(out, Catch::Contains("STUCK: worker 1 on b:2: no progress for "
                                  "7.3 s"));
}

TEST_CASE("troupe top: token, garbage, unreachable, bad flags") {
  std::string out, err;
  net::http_options o;
  o.token = "s3cret";
  net::http_server guarded{o, routes(cluster_json)};
  auto at = "--connect=127.0.0.1:" + std::to_string(guarded.port());
  CHECK(top({at, "--once"}, out, err) == 1);
  CHECK_THAT(err, Catch::Contains("refused the token"));
  CHECK(top({at, "--once", "--token=s3cret"}, out, err) == 0);

  net::http_server garbage{{}, routes("<html>not json")};
  CHECK(top({"--connect=127.0.0.1:" + std::to_string(garbage.port()), "--once"},
            out, err)
        == 1);
  CHECK_THAT(err, Catch::Contains("not troupe monitoring JSON"));

  std::uint16_t closed;
  {
    net::http_server gone{{}, routes(cluster_json)};
    closed = gone.port();
  }
  CHECK(
      top({"--connect=127.0.0.1:" + std::to_string(closed), "--once"}, out, err)
      == 1);
  CHECK_THAT(err, Catch::Contains("cannot get http://127.0.0.1:"
                                  + std::to_string(closed)));
  CHECK(top({"--once"}, out, err) == 2);
  CHECK(top({at, "--interval=0"}, out, err) == 2);
  CHECK(top({at, "--bogus"}, out, err) == 2);
}

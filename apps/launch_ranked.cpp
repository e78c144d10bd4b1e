// troupe launch --launcher=...: one process of a job started by a cluster's
// launcher (srun, mpirun, a Kubernetes StatefulSet or Indexed Job), every
// process with the same command line. Rank 0 runs troupe train --listen and
// the others join it as nodes (apps/launcher_env.hpp says how each learns
// its place).

#include "apps/launch_ranked.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "actors/detail/log.hpp"
#include "apps/cli.hpp"
#include "apps/launcher_env.hpp"
#include "apps/link_flags.hpp"
#include "apps/node_command.hpp"
#include "apps/train_command.hpp"
#include "net/system.hpp"
#include "optim/checkpoint_dir.hpp"

namespace troupe::apps {

namespace {

/// HOSTNAME (a container's: the pod's name), else the kernel's.
std::string this_hostname() {
  if (const char* env = std::getenv("HOSTNAME"); env != nullptr && *env != 0)
    return env;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return {};
  return name;
}

/// HOST:PORT as troupe node --join reads it ([v6]:PORT for IPv6).
std::string dial(const launcher_place& p) {
  auto host
      = p.host.find(':') == std::string::npos ? p.host : "[" + p.host + "]";
  return host + ":" + std::to_string(p.port);
}

/// What --explain prints: the place, its sources and the role.
int explain(const launcher_place& p, const train_options& o,
            const std::string& listen_host, std::uint64_t workers,
            const ranked_launch& r) {
  auto at = dial(p);
  // Short lines: an 80-column terminal.
  std::string role, runs;
  if (p.world_size == 1) {
    role = "the whole job in this process";
    runs = "troupe train";
  } else if (p.rank == 0) {
    role = "the coordinator, with " + std::to_string(workers) + " of the "
           + "workers";
    runs = "troupe train --listen=" + listen_host + ":" + std::to_string(p.port)
           + " --expect=" + std::to_string(p.world_size - 1);
  } else {
    role = "a node with " + std::to_string(workers) + " worker slot"
           + (workers == 1 ? "" : "s");
    runs = "troupe node --join=" + at + " --workers=" + std::to_string(workers)
           + " --shards=" + r.node_shards;
  }
  std::cout << "launcher: " << p.launcher << "\nrank " << p.rank << " of "
            << p.world_size << ": " << role << "\n  runs: " << runs << '\n';
  for (const auto& s : p.sources)
    std::cout << "  " << s << '\n';
  if (o.json) {
    nlohmann::json j{{"launcher", p.launcher},
                     {"rank", p.rank},
                     {"world_size", p.world_size},
                     {"coordinator", p.world_size > 1 ? at : ""},
                     {"role", p.world_size == 1 ? "job"
                              : p.rank == 0     ? "coordinator"
                                                : "node"},
                     {"workers", workers},
                     {"sources", p.sources}};
    std::cout << j.dump() << '\n';
  }
  return 0;
}

/// --auto-resume: continue the job of --checkpoint-dir when it holds a
/// complete checkpoint, else start it.
void resume_if_any(train_options& o) {
  if (o.checkpoint_dir.empty())
    throw usage_error("troupe launch: --auto-resume needs --checkpoint-dir "
                      "(where a restarted rank 0 finds the job's state)");
  if (!o.resume.empty())
    throw usage_error("troupe launch: give --auto-resume or --resume, not "
                      "both");
  // The manifests only: troupe train --resume reads and checks the files
  // (and names a damaged newer checkpoint it skips).
  std::vector<std::uint64_t> steps;
  std::error_code ec;
  if (std::filesystem::is_directory(o.checkpoint_dir, ec))
    steps = optim::checkpoint_steps(o.checkpoint_dir);
  if (steps.empty()) {
    actors::detail::log().info("--auto-resume: no complete checkpoint in {}: "
                               "starting the job",
                               o.checkpoint_dir);
    return;
  }
  char step[32];
  std::snprintf(step, sizeof step, "step-%012llu",
                static_cast<unsigned long long>(steps.back()));
  actors::detail::log().info("--auto-resume: continuing {}/{}",
                             o.checkpoint_dir, step);
  o.resume = o.checkpoint_dir;
}

} // namespace

bool parse_launch_train_flags(const std::vector<std::string>& rest,
                              train_options& o, const char* expect_from) {
  option_parser p{"troupe launch"};
  add_train_options(p, o, rest);
  if (!p.parse(rest))
    return false;
  o.given = p.given();
  if (o.expect > 0)
    throw usage_error(std::string{"troupe launch: --expect is set from "}
                      + expect_from);
  return true;
}

int ranked_launch_main(ranked_launch r, std::vector<std::string> rest) {
  return guarded_main("troupe launch", [&] {
    if (r.rank)
      r.flags.rank = launch_count(*r.rank, "--rank");
    if (r.world_size)
      r.flags.world_size = launch_count(*r.world_size, "--world-size");
    if (!r.coordinator_grace.empty()) {
      char* end = nullptr;
      auto grace = std::strtod(r.coordinator_grace.c_str(), &end);
      if (end == r.coordinator_grace.c_str() || *end != 0
          || !(grace >= 0 && grace <= 86400))
        throw usage_error("troupe launch: --coordinator-grace="
                          + r.coordinator_grace.substr(0, 40)
                          + ": expected seconds from 0 to 86400");
    }
    train_options o;
    if (!parse_launch_train_flags(rest, o, "the world size"))
      return 0;
    std::string listen_host = "0.0.0.0";
    if (!o.listen.empty()) {
      try {
        auto e = net::parse_endpoint(o.listen, "--listen");
        listen_host = e.host.find(':') == std::string::npos
                          ? e.host
                          : "[" + e.host + "]"; // IPv6: [::]:PORT
        r.flags.listen_port = e.port;
      } catch (const std::invalid_argument& e) {
        throw usage_error(std::string{"troupe launch: "} + e.what());
      }
    }
    r.flags.hostname = this_hostname();
    if (std::ifstream hosts{"/etc/hosts"}) {
      std::string text((std::istreambuf_iterator<char>(hosts)),
                       std::istreambuf_iterator<char>());
      if (text.size() < (1u << 20))
        r.flags.fqdn = fqdn_from_hosts(text, r.flags.hostname);
    }
    auto place = resolve_place(r.flags, process_env());
    if (o.workers < place.world_size)
      throw usage_error("troupe launch: --workers=" + std::to_string(o.workers)
                        + " is fewer than the "
                        + std::to_string(place.world_size)
                        + " ranks: each rank hosts at least one worker");
    auto workers = rank_workers(o.workers, place.rank, place.world_size);
    if (r.explain)
      return explain(place, o, listen_host, workers, r);
    // Every rank checks the flags as rank 0 will (a node would otherwise
    // wait --join-timeout for a coordinator that refused them).
    if (place.world_size > 1) { // rank 0's listen on every rank
      o.listen = listen_host + ":" + std::to_string(place.port);
      o.expect = place.world_size - 1;
    }
    check_train_flags(o);
    auto& log = actors::detail::log();
    if (r.auto_resume && place.rank == 0)
      resume_if_any(o);
    if (place.world_size == 1)
      return train_main_with(o);
    if (place.rank == 0) {
      log.info("rank 0 of {} ({}): the coordinator, on {}; nodes join at {}",
               place.world_size, place.launcher, o.listen, dial(place));
      return train_main_with(o);
    }
    std::vector<std::string> node{
        "--join=" + dial(place), "--workers=" + std::to_string(workers),
        "--shards=" + r.node_shards, "--direct-links=" + r.direct_links};
    if (!r.coordinator_grace.empty())
      node.push_back("--coordinator-grace=" + r.coordinator_grace);
    for (auto& x : link_arguments(o.link))
      node.push_back(x);
    log.info("rank {} of {} ({}): a node joining {} with {} worker slots",
             place.rank, place.world_size, place.launcher, dial(place),
             workers);
    return node_main(node, "troupe node " + std::to_string(place.rank));
  });
}

} // namespace troupe::apps

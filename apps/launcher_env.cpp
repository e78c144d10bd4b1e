#include "apps/launcher_env.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "apps/cli.hpp"

namespace troupe::apps {

namespace {

constexpr std::uint64_t max_world = 100000;
constexpr std::uint16_t default_port = 7400;

[[noreturn]] void fail(const std::string& why) {
  throw usage_error("troupe launch: " + why);
}

/// HOST[:PORT]; port 0 when absent.
std::pair<std::string, std::uint16_t> host_port(const std::string& text,
                                                const std::string& what) {
  auto colon = text.rfind(':');
  // [v6]:PORT or [v6]; a bare IPv6 address has several colons, no port.
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos
        || (close + 1 < text.size() && text[close + 1] != ':'))
      fail(what + "=" + text.substr(0, 60) + ": expected [IPv6]:PORT");
    if (close + 1 == text.size())
      return {text.substr(1, close - 1), 0};
    colon = close + 1;
  } else if (colon == std::string::npos || text.find(':') != colon) {
    return {text, 0};
  }
  auto port = launch_count(text.substr(colon + 1), what + " port");
  if (port == 0 || port > 65535)
    fail(what + "=" + text + ": the port must be from 1 to 65535");
  auto host
      = text.front() == '[' ? text.substr(1, colon - 2) : text.substr(0, colon);
  return {host, static_cast<std::uint16_t>(port)};
}

struct reader {
  const env_reader& env;
  std::optional<std::string> get(const char* name) const {
    return env(name);
  }
  bool has(const char* name) const {
    return env(name).has_value();
  }
  std::uint64_t num(const char* name) const {
    return launch_count(*env(name), name);
  }
};

/// The launcher whose variables say who we are, for --launcher=auto.
std::string detect(const reader& r) {
  if (r.has("OMPI_COMM_WORLD_RANK"))
    return "open-mpi";
  // MPICH's Hydra (and Intel MPI) run under Slurm as well: their PMI_RANK
  // is the rank; a task of srun --mpi=pmi2 has it equal to SLURM_PROCID.
  if (r.has("PMI_RANK"))
    return "mpich";
  if (r.has("SLURM_PROCID"))
    return "slurm";
  if (r.has("KUBERNETES_SERVICE_HOST"))
    return "kubernetes";
  return "flags";
}

/// The names of `launcher`'s rank and world-size variables.
std::pair<const char*, const char*> rank_variables(const std::string& l) {
  if (l == "open-mpi")
    return {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"};
  if (l == "mpich")
    return {"PMI_RANK", "PMI_SIZE"};
  if (l == "slurm")
    return {"SLURM_PROCID", "SLURM_NTASKS"};
  if (l == "kubernetes")
    return {"JOB_COMPLETION_INDEX", "TROUPE_WORLD_SIZE"};
  return {"", ""};
}

/// Kubernetes: the index of an Indexed Job, else a StatefulSet pod's
/// ordinal, the number ending its host name (NAME-ORDINAL).
std::pair<std::uint64_t, std::string> pod_rank(const reader& r,
                                               const std::string& hostname) {
  auto dash = hostname.rfind('-');
  auto ordinal
      = dash == std::string::npos ? std::string{} : hostname.substr(dash + 1);
  if (auto index = r.get("JOB_COMPLETION_INDEX"))
    return {launch_count(*index, "JOB_COMPLETION_INDEX"),
            "JOB_COMPLETION_INDEX"};
  if (ordinal.empty()
      || ordinal.find_first_not_of("0123456789") != std::string::npos)
    fail("the host name " + hostname
         + " is not a StatefulSet pod's (NAME-ORDINAL) and "
           "JOB_COMPLETION_INDEX is not set: give --rank");
  return {launch_count(ordinal, "the host name's ordinal"), "the host name"};
}

/// Rank 0's host as the launcher tells it, or "" when it cannot.
std::string launcher_host(const reader& r, const std::string& launcher,
                          const std::string& hostname, const std::string& fqdn,
                          std::uint64_t rank, std::uint64_t world,
                          std::string& source) {
  auto slurm_first = [&](const char* name) {
    try {
      source = "the first host of " + std::string{name};
      return first_slurm_host(*r.get(name));
    } catch (const std::invalid_argument& e) {
      fail(std::string{name} + ": " + e.what());
    }
  };
  if (launcher == "slurm")
    return slurm_first(r.has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST"
                                                    : "SLURM_JOB_NODELIST");
  if (launcher == "open-mpi" || launcher == "mpich") {
    auto local = launcher == "open-mpi" ? "OMPI_COMM_WORLD_LOCAL_SIZE"
                                        : "MPI_LOCALNRANKS";
    if (r.has(local) && r.num(local) == world) {
      source = std::string{local} + ": all on this host";
      return "127.0.0.1";
    }
    // mpirun in a Slurm allocation runs rank 0 on the allocation's first
    // host (the batch host, where mpirun runs).
    if (r.has("SLURM_JOB_NODELIST"))
      return slurm_first("SLURM_JOB_NODELIST");
    return "";
  }
  if (launcher == "kubernetes") {
    // The domain after this pod's name: TROUPE_SERVICE's, else its fully
    // qualified name's (a pod of a headless Service's subdomain).
    std::string domain;
    if (auto service = r.get("TROUPE_SERVICE"); service && !service->empty())
      domain = *service;
    else if (fqdn.size() > hostname.size() + 1
             && fqdn.compare(0, hostname.size() + 1, hostname + ".") == 0)
      domain = fqdn.substr(hostname.size() + 1);
    else
      fail("Kubernetes: TROUPE_SERVICE (the headless Service's name) is not "
           "set and this pod has no fully qualified name: the pods reach "
           "rank 0 as NAME-0.SERVICE");
    auto suffix = "-" + std::to_string(rank);
    if (hostname.size() <= suffix.size()
        || hostname.compare(hostname.size() - suffix.size(), suffix.size(),
                            suffix)
               != 0)
      fail("Kubernetes: the host name " + hostname + " does not end in "
           + suffix + ", this pod's rank");
    source = r.has("TROUPE_SERVICE") ? "the host name and TROUPE_SERVICE"
                                     : "the pod's fully qualified name";
    return hostname.substr(0, hostname.size() - suffix.size()) + "-0." + domain;
  }
  return "";
}

/// The port every rank derives alike when none is given: per job where
/// the launcher numbers jobs, so two jobs sharing a host do not collide.
std::uint16_t launcher_port(const reader& r, const std::string& launcher,
                            std::string& source) {
  const char* job = launcher == "slurm"      ? "SLURM_JOB_ID"
                    : launcher == "open-mpi" ? "OMPI_MCA_ess_base_jobid"
                                             : nullptr;
  if (job != nullptr && r.has(job)) {
    source = std::string{"17000 + "} + job + " mod 8000";
    return static_cast<std::uint16_t>(17000 + r.num(job) % 8000);
  }
  source = "the default";
  return default_port;
}

} // namespace

std::uint64_t launch_count(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 18
      || text.find_first_not_of("0123456789") != std::string::npos)
    fail(what + "=" + text.substr(0, 40) + " is not a number");
  return std::stoull(text);
}

env_reader process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr)
      return std::nullopt;
    return std::string{v};
  };
}

std::string first_slurm_host(const std::string& list) {
  // The first entry at the top level (commas inside brackets list ranges),
  // each bracket replaced by its first value: "a[07-09,12]b[1-2]" -> a07b1.
  std::string host;
  for (std::size_t i = 0; i < list.size(); ++i) {
    char c = list[i];
    if (c == ',')
      break;
    if (c == ']')
      throw std::invalid_argument("a ']' without '['");
    if (c != '[') {
      host += c;
      continue;
    }
    auto close = list.find(']', i);
    if (close == std::string::npos)
      throw std::invalid_argument("a '[' without ']' in " + list.substr(0, 80));
    auto range = list.substr(i + 1, close - i - 1);
    auto first = range.substr(0, range.find_first_of(",-"));
    if (first.empty()
        || first.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("the range [" + range.substr(0, 40)
                                  + "] does not start with a number");
    host += first;
    i = close;
  }
  if (host.empty() || host.size() > 253
      || host.find_first_of(" \t\n[]") != std::string::npos)
    throw std::invalid_argument("no host in \"" + list.substr(0, 80) + "\"");
  return host;
}

std::string fqdn_from_hosts(const std::string& hosts,
                            const std::string& hostname) {
  if (hostname.empty())
    return {};
  std::istringstream lines{hosts};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words{line.substr(0, line.find('#'))};
    std::vector<std::string> names;
    for (std::string w; words >> w;)
      names.push_back(w);
    if (names.size() < 2
        || std::find(names.begin() + 1, names.end(), hostname) == names.end())
      continue; // an address without names, or not this host's
    for (auto n = names.begin() + 1; n != names.end(); ++n)
      if (n->size() > hostname.size() + 1
          && n->compare(0, hostname.size() + 1, hostname + ".") == 0)
        return *n;
  }
  return {};
}

std::uint64_t rank_workers(std::uint64_t workers, std::uint64_t rank,
                           std::uint64_t world) {
  return workers * (rank + 1) / world - workers * rank / world;
}

launcher_place resolve_place(const launcher_flags& flags,
                             const env_reader& env) {
  launcher_place p;
  reader r{env};
  const auto& l = flags.launcher;
  if (l != "auto" && l != "slurm" && l != "mpi" && l != "kubernetes"
      && l != "flags")
    fail("--launcher=" + l
         + ": expected auto, slurm, mpi, kubernetes or flags");
  std::string launcher = l;
  if (l == "auto")
    launcher = detect(r);
  else if (l == "mpi")
    launcher = r.has("OMPI_COMM_WORLD_RANK") ? "open-mpi" : "mpich";
  p.launcher = launcher;
  if (launcher == "slurm" && !r.has("SLURM_STEP_ID") && !flags.rank)
    fail("SLURM_PROCID is set but SLURM_STEP_ID is not: this is a Slurm "
         "batch script, not a task; start the tasks with srun troupe launch "
         "...");

  auto [rank_var, world_var] = rank_variables(launcher);
  // The rank: --rank, TROUPE_RANK, the launcher's.
  if (flags.rank) {
    p.rank = *flags.rank;
    p.sources.push_back("rank from --rank");
  } else if (r.has("TROUPE_RANK")) {
    p.rank = r.num("TROUPE_RANK");
    p.sources.push_back("rank from TROUPE_RANK");
  } else if (launcher == "kubernetes") {
    auto [rank, from] = pod_rank(r, flags.hostname);
    p.rank = rank;
    p.sources.push_back("rank from " + from);
  } else if (launcher != "flags" && r.has(rank_var)) {
    p.rank = r.num(rank_var);
    p.sources.push_back(std::string{"rank from "} + rank_var);
  } else if (launcher != "flags") {
    fail(std::string{"--launcher="} + l + ": "
         + (l == "mpi" ? "neither OMPI_COMM_WORLD_RANK nor PMI_RANK" : rank_var)
         + " is set: give --rank");
  } else {
    fail("no launcher found: none of SLURM_PROCID (srun), "
         "OMPI_COMM_WORLD_RANK (Open MPI), PMI_RANK (MPICH), "
         "KUBERNETES_SERVICE_HOST (a pod) is set; give --rank and "
         "--world-size (and --coordinator)");
  }
  // The world size: --world-size, TROUPE_WORLD_SIZE, the launcher's.
  if (flags.world_size) {
    p.world_size = *flags.world_size;
    p.sources.push_back("world size from --world-size");
  } else if (r.has("TROUPE_WORLD_SIZE")) {
    p.world_size = r.num("TROUPE_WORLD_SIZE");
    p.sources.push_back("world size from TROUPE_WORLD_SIZE");
  } else if (launcher != "flags" && launcher != "kubernetes"
             && r.has(world_var)) {
    p.world_size = r.num(world_var);
    p.sources.push_back(std::string{"world size from "} + world_var);
  } else {
    fail(std::string{"the world size is unknown: "}
         + (launcher == "flags" || launcher == "kubernetes"
                ? std::string{"give --world-size or TROUPE_WORLD_SIZE"}
                : std::string{world_var} + " is not set"));
  }
  if (p.world_size == 0 || p.world_size > max_world)
    fail("the world size " + std::to_string(p.world_size)
         + " must be from 1 to " + std::to_string(max_world));
  if (p.rank >= p.world_size)
    fail("rank " + std::to_string(p.rank) + " is not below the world size "
         + std::to_string(p.world_size));

  // The coordinator: --coordinator, TROUPE_COORDINATOR, the launcher's.
  std::uint16_t given_port = 0;
  std::string source;
  if (!flags.coordinator.empty()) {
    std::tie(p.host, given_port)
        = host_port(flags.coordinator, "--coordinator");
    source = "--coordinator";
  } else if (auto c = r.get("TROUPE_COORDINATOR"); c && !c->empty()) {
    std::tie(p.host, given_port) = host_port(*c, "TROUPE_COORDINATOR");
    source = "TROUPE_COORDINATOR";
  } else {
    p.host = launcher_host(r, launcher, flags.hostname, flags.fqdn, p.rank,
                           p.world_size, source);
  }
  if (p.host.empty() && p.world_size > 1)
    fail(launcher == "flags"
             ? "give --coordinator=HOST[:PORT] (rank 0's host) or "
               "TROUPE_COORDINATOR"
             : "the ranks span hosts and " + launcher
                   + " does not say where rank 0 runs: give "
                     "--coordinator=HOST[:PORT] or TROUPE_COORDINATOR");
  if (!p.host.empty())
    p.sources.push_back("coordinator host " + p.host + " from " + source);
  std::string port_source;
  if (given_port != 0) {
    p.port = given_port;
    port_source = source;
  } else if (flags.listen_port != 0) {
    p.port = flags.listen_port;
    port_source = "--listen";
  } else {
    p.port = launcher_port(r, launcher, port_source);
  }
  p.sources.push_back("port " + std::to_string(p.port) + " from "
                      + port_source);
  return p;
}

} // namespace troupe::apps

#pragma once

// Where a process started by a cluster's launcher stands in its job: its
// rank, the world size and the coordinator's address, read from the
// launcher's environment (Slurm's srun, Open MPI's or MPICH's mpirun, a
// Kubernetes StatefulSet or Indexed Job) or from explicit flags. Pure: the
// environment is a map, so every rule is testable without a launcher.
// docs/deployment.md lists the variables and what wins.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace troupe::apps {

/// Reads a variable of the environment (nullopt: unset).
using env_reader = std::function<std::optional<std::string>(const char*)>;

/// A decimal number of at most 18 digits (a job id may have 10), or a
/// usage_error naming `what` ("SLURM_PROCID=two is not a number").
std::uint64_t launch_count(const std::string& text, const std::string& what);

/// The process's own environment.
env_reader process_env();

/// What `troupe launch --launcher=...` was given on its command line.
struct launcher_flags {
  /// auto, slurm, mpi, kubernetes or flags.
  std::string launcher = "auto";
  std::optional<std::uint64_t> rank, world_size;
  /// --coordinator=HOST[:PORT]: where rank 0 listens, as the others dial it.
  std::string coordinator;
  /// The port of --listen when given with one (every rank sees the same
  /// flags, so it is the coordinator's port): 0 when not.
  std::uint16_t listen_port = 0;
  /// This host's name (Kubernetes: a StatefulSet pod's is NAME-ORDINAL).
  std::string hostname;
  /// Its fully qualified name when known (a pod's:
  /// NAME-ORDINAL.SERVICE.NAMESPACE.svc.cluster.local, from /etc/hosts).
  std::string fqdn;
};

/// The process's place in its job, and where each value came from.
struct launcher_place {
  std::uint64_t rank = 0;
  std::uint64_t world_size = 1;
  std::string host; ///< the coordinator's host, as the other ranks dial it
  std::uint16_t port = 0;
  std::string launcher; ///< slurm, open-mpi, mpich, kubernetes or flags
  /// One line per value: "rank 2 from SLURM_PROCID".
  std::vector<std::string> sources;
};

/// Resolves the place; throws usage_error naming the variable or flag that
/// is missing or malformed, and the launcher it looked for.
launcher_place resolve_place(const launcher_flags& flags,
                             const env_reader& env);

/// The first host of a Slurm node list ("gpu[07-09,12],cpu3" -> "gpu07");
/// throws std::invalid_argument on a malformed list.
std::string first_slurm_host(const std::string& list);

/// The fully qualified name /etc/hosts (its text) gives `hostname`: the
/// first name on a line that also names `hostname` and begins with
/// "hostname."; "" if none.
std::string fqdn_from_hosts(const std::string& hosts,
                            const std::string& hostname);

/// The workers rank `rank` of `world` hosts when the job has `workers`
/// (an even split; rank 0's stay in the coordinator's process).
std::uint64_t rank_workers(std::uint64_t workers, std::uint64_t rank,
                           std::uint64_t world);

} // namespace troupe::apps

// troupe launch --launcher: a process's rank, world size and coordinator
// from each launcher's variables, what wins when several are present, and
// an error naming what is missing (apps/launcher_env.hpp).

#include <map>

#include <catch2/catch.hpp>

#include "apps/cli.hpp"
#include "apps/launcher_env.hpp"

using namespace troupe::apps;

namespace {

using vars = std::map<std::string, std::string>;

env_reader env_of(const vars& v) {
  return [v](const char* name) -> std::optional<std::string> {
    auto it = v.find(name);
    if (it == v.end())
      return std::nullopt;
    return it->second;
  };
}

launcher_place place(const vars& v, launcher_flags f = {}) {
  if (f.hostname.empty())
    f.hostname = "host7";
  return resolve_place(f, env_of(v));
}

/// The usage error's text, or "" when there is none.
std::string error_of(const vars& v, launcher_flags f = {}) {
  try {
    place(v, std::move(f));
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

const vars srun_task{{"SLURM_PROCID", "2"},
                     {"SLURM_NTASKS", "4"},
                     {"SLURM_STEP_ID", "0"},
                     {"SLURM_JOB_ID", "123456"},
                     {"SLURM_JOB_NODELIST", "gpu[01-08]"},
                     {"SLURM_STEP_NODELIST", "gpu[03-04,07],cpu1"}};

} // namespace

TEST_CASE("a Slurm node list's first host") {
  CHECK(first_slurm_host("vm") == "vm");
  CHECK(first_slurm_host("gpu[07-09,12],cpu3") == "gpu07");
  CHECK(first_slurm_host("a,b[1-2]") == "a");
  CHECK(first_slurm_host("rack[2-3]-n[010-012]") == "rack2-n010");
  CHECK(first_slurm_host("n[5]") == "n5");
  CHECK_THROWS_AS(first_slurm_host(""), std::invalid_argument);
  CHECK_THROWS_AS(first_slurm_host("gpu[01-03"), std::invalid_argument);
  CHECK_THROWS_AS(first_slurm_host("gpu]"), std::invalid_argument);
  CHECK_THROWS_AS(first_slurm_host("gpu[x-y]"), std::invalid_argument);
}

TEST_CASE("an srun task: SLURM_PROCID, SLURM_NTASKS, the step's first host") {
  auto p = place(srun_task);
  CHECK(p.launcher == "slurm");
  CHECK(p.rank == 2);
  CHECK(p.world_size == 4);
  CHECK(p.host == "gpu03");
  // Per job, so two jobs sharing a host do not collide: 17000 + id mod 8000.
  CHECK(p.port == 17000 + 123456 % 8000);
  REQUIRE(p.sources.size() == 4);
  CHECK(p.sources[0] == "rank from SLURM_PROCID");
  CHECK(p.sources[2]
        == "coordinator host gpu03 from the first host of SLURM_STEP_NODELIST");
  // Without a step node list, the job's.
  auto v = srun_task;
  v.erase("SLURM_STEP_NODELIST");
  CHECK(place(v).host == "gpu01");
  v["SLURM_JOB_NODELIST"] = "gpu[01-";
  CHECK(error_of(v).find("SLURM_JOB_NODELIST: a '[' without ']'")
        != std::string::npos);
}

TEST_CASE("a Slurm batch script is not a task") {
  vars batch{{"SLURM_PROCID", "0"},
             {"SLURM_NTASKS", "4"},
             {"SLURM_JOB_NODELIST", "gpu[01-04]"}};
  CHECK(error_of(batch).find("this is a Slurm batch script, not a task")
        != std::string::npos);
}

TEST_CASE("mpirun: Open MPI's and MPICH's variables, over Slurm's") {
  vars ompi{{"OMPI_COMM_WORLD_RANK", "1"},
            {"OMPI_COMM_WORLD_SIZE", "3"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
            {"OMPI_MCA_ess_base_jobid", "601227265"}};
  auto p = place(ompi);
  CHECK(p.launcher == "open-mpi");
  CHECK(p.rank == 1);
  CHECK(p.world_size == 3);
  CHECK(p.host == "127.0.0.1"); // every rank on this host
  CHECK(p.port == 17000 + 601227265 % 8000);
  // A job id of 10 digits (Open MPI's are 32-bit).
  auto big = ompi;
  big["OMPI_MCA_ess_base_jobid"] = "4294901761";
  CHECK(place(big).port == 17000 + 4294901761ull % 8000);
  // Ranks on several hosts: mpirun does not say where rank 0 runs.
  ompi["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  CHECK(error_of(ompi).find("give --coordinator=HOST[:PORT] or "
                            "TROUPE_COORDINATOR")
        != std::string::npos);
  // mpirun in a Slurm allocation (its orted a Slurm task): the rank is
  // Open MPI's, rank 0 on the allocation's first host.
  auto within = ompi;
  for (const auto& [k, v] : srun_task)
    within[k] = v;
  p = place(within);
  CHECK(p.launcher == "open-mpi");
  CHECK(p.rank == 1);
  CHECK(p.world_size == 3);
  CHECK(p.host == "gpu01");
  // MPICH's Hydra (or srun --mpi=pmi2): PMI_RANK and PMI_SIZE.
  vars hydra{{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALNRANKS", "2"}};
  p = place(hydra);
  CHECK(p.launcher == "mpich");
  CHECK(p.rank == 0);
  CHECK(p.world_size == 2);
  CHECK(p.host == "127.0.0.1");
  CHECK(p.port == 7400);
  launcher_flags mpi;
  mpi.launcher = "mpi";
  CHECK(error_of({}, mpi).find("neither OMPI_COMM_WORLD_RANK nor PMI_RANK")
        != std::string::npos);
}

TEST_CASE("Kubernetes: a StatefulSet's ordinal or an Indexed Job's index") {
  vars pod{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
           {"TROUPE_WORLD_SIZE", "3"},
           {"TROUPE_SERVICE", "troupe"}};
  launcher_flags f;
  f.hostname = "train-2";
  auto p = place(pod, f);
  CHECK(p.launcher == "kubernetes");
  CHECK(p.rank == 2);
  CHECK(p.world_size == 3);
  CHECK(p.host == "train-0.troupe");
  CHECK(p.port == 7400);
  // An Indexed Job: pods are JOB-INDEX as well.
  auto job = pod;
  job["JOB_COMPLETION_INDEX"] = "1";
  f.hostname = "mnist-1";
  p = place(job, f);
  CHECK(p.rank == 1);
  CHECK(p.host == "mnist-0.troupe");
  CHECK(p.sources[0] == "rank from JOB_COMPLETION_INDEX");
  // What a pod needs and may lack, named.
  f.hostname = "train-2";
  auto no_world = pod;
  no_world.erase("TROUPE_WORLD_SIZE");
  CHECK(error_of(no_world, f).find("give --world-size or TROUPE_WORLD_SIZE")
        != std::string::npos);
  auto no_service = pod;
  no_service.erase("TROUPE_SERVICE");
  CHECK(error_of(no_service, f).find("TROUPE_SERVICE") != std::string::npos);
  // Without TROUPE_SERVICE: the domain of the pod's fully qualified name.
  f.fqdn = "train-2.troupe.ml.svc.cluster.local";
  p = place(no_service, f);
  CHECK(p.host == "train-0.troupe.ml.svc.cluster.local");
  CHECK(p.sources[2]
        == "coordinator host train-0.troupe.ml.svc.cluster.local "
           "from the pod's fully qualified name");
  f.fqdn.clear();
  f.hostname = "worker";
  CHECK(error_of(pod, f).find("not a StatefulSet pod's") != std::string::npos);
  // A rank from TROUPE_RANK must match the host name's ordinal to derive
  // rank 0's name from it.
  auto ranked = pod;
  ranked["TROUPE_RANK"] = "1";
  f.hostname = "train-2";
  CHECK(error_of(ranked, f).find("does not end in -1") != std::string::npos);
}

TEST_CASE("a pod's fully qualified name from /etc/hosts") {
  // What the kubelet writes into a pod of a headless Service's subdomain.
  std::string hosts
      = "# Kubernetes-managed hosts file.\n"
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "10.244.1.7\ttrain-1.troupe.ml.svc.cluster.local\t"
        "train-1\n"
        "10.244.1.9 other-1.troupe.ml.svc.cluster.local other-1\n";
  CHECK(fqdn_from_hosts(hosts, "train-1")
        == "train-1.troupe.ml.svc.cluster.local");
  CHECK(fqdn_from_hosts(hosts, "train-2").empty());
  CHECK(fqdn_from_hosts(hosts, "").empty());
  CHECK(fqdn_from_hosts("10.0.0.1 train-1\n", "train-1").empty());
  CHECK(fqdn_from_hosts("garbage without newline", "train-1").empty());
}

TEST_CASE("explicit flags win over TROUPE_ variables, which win over the "
          "launcher's") {
  launcher_flags f;
  f.rank = 3;
  f.coordinator = "head:9000";
  auto v = srun_task;
  v["TROUPE_RANK"] = "1";
  v["TROUPE_WORLD_SIZE"] = "5";
  auto p = place(v, f);
  CHECK(p.rank == 3);       // --rank over TROUPE_RANK and SLURM_PROCID
  CHECK(p.world_size == 5); // TROUPE_WORLD_SIZE over SLURM_NTASKS
  CHECK(p.host == "head");
  CHECK(p.port == 9000);
  v["TROUPE_COORDINATOR"] = "other:9100";
  f.coordinator.clear();
  p = place(v, f);
  CHECK(p.host == "other");
  CHECK(p.port == 9100);
  // --listen's port is the job's when no coordinator names one.
  v["TROUPE_COORDINATOR"] = "other";
  f.listen_port = 7777;
  CHECK(place(v, f).port == 7777);
  // Flags alone, no launcher.
  launcher_flags alone;
  alone.rank = 0;
  alone.world_size = 2;
  alone.coordinator = "10.1.2.3:7500";
  p = place({}, alone);
  CHECK(p.launcher == "flags");
  CHECK(p.host == "10.1.2.3");
  CHECK(p.port == 7500);
  alone.coordinator = "[fd00::2]:7600"; // IPv6, bracketed with a port
  p = place({}, alone);
  CHECK(p.host == "fd00::2");
  CHECK(p.port == 7600);
  alone.coordinator = "fd00::2"; // bare: no port
  CHECK(place({}, alone).host == "fd00::2");
  alone.coordinator = "[fd00::2]x";
  CHECK(error_of({}, alone).find("expected [IPv6]:PORT") != std::string::npos);
  alone.coordinator.clear();
  CHECK(error_of({}, alone).find("give --coordinator") != std::string::npos);
  alone.world_size = 1; // one process needs no coordinator address
  CHECK(place({}, alone).world_size == 1);
}

TEST_CASE("no launcher, malformed values and impossible ranks are named") {
  CHECK(error_of({}).find("no launcher found") != std::string::npos);
  auto v = srun_task;
  v["SLURM_PROCID"] = "two";
  CHECK(error_of(v).find("SLURM_PROCID=two is not a number")
        != std::string::npos);
  v["SLURM_PROCID"] = "4";
  CHECK(error_of(v).find("rank 4 is not below the world size 4")
        != std::string::npos);
  v["SLURM_PROCID"] = "0";
  v["SLURM_NTASKS"] = "0";
  CHECK(error_of(v).find("the world size 0 must be from 1")
        != std::string::npos);
  launcher_flags f;
  f.coordinator = "head:0";
  CHECK(error_of(srun_task, f).find("the port must be from 1 to 65535")
        != std::string::npos);
  f.launcher = "yarn";
  CHECK(error_of(srun_task, f).find("--launcher=yarn: expected auto")
        != std::string::npos);
}

TEST_CASE("the workers split evenly over the ranks") {
  for (std::uint64_t world : {1, 2, 3, 7}) {
    for (std::uint64_t workers = world; workers < 3 * world + 2; ++workers) {
      std::uint64_t sum = 0, least = workers, most = 0;
      for (std::uint64_t r = 0; r < world; ++r) {
        auto n = rank_workers(workers, r, world);
        sum += n;
        least = std::min(least, n);
        most = std::max(most, n);
      }
      CHECK(sum == workers);
      CHECK(most - least <= 1);
      CHECK(least >= 1);
    }
  }
}

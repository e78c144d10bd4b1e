// troupe launch: a distributed job in one command. Runs the coordinator
// (troupe train --listen) here and starts its nodes: M local processes
// (--local=M) or one per line of a hostfile over ssh (--hosts=FILE), like
// mpirun or horovodrun.

#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "actors/detail/log.hpp"
#include "apps/cli.hpp"
#include "apps/launch_ranked.hpp"
#include "apps/node_command.hpp"
#include "apps/output_relay.hpp"
#include "apps/train_command.hpp"

extern char** environ;

namespace troupe::apps {

namespace {

struct host_entry {
  std::string host;
  std::uint32_t slots = 1;
};

/// Reads `host[:slots]` lines; '#' starts a comment.
std::vector<host_entry> read_hostfile(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    throw usage_error("troupe launch: --hosts=" + path + ": cannot be read");
  std::vector<host_entry> hosts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words{line};
    std::string word, extra;
    if (!(words >> word))
      continue;
    auto bad = [&](const std::string& why) {
      return usage_error("troupe launch: " + path + ":" + std::to_string(number)
                         + ": " + why + " (expected host[:slots])");
    };
    if (words >> extra)
      throw bad("one host per line");
    host_entry h;
    auto colon = word.rfind(':');
    h.host = word.substr(0, colon);
    if (colon != std::string::npos) {
      auto n = word.substr(colon + 1);
      if (n.empty() || n.size() > 4
          || n.find_first_not_of("0123456789") != std::string::npos
          || std::stoul(n) == 0)
        throw bad("slots must be a number from 1 to 9999");
      h.slots = static_cast<std::uint32_t>(std::stoul(n));
    }
    if (h.host.empty())
      throw bad("no host");
    hosts.push_back(h);
  }
  if (hosts.empty())
    throw usage_error("troupe launch: --hosts=" + path + " lists no host");
  return hosts;
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in{s};
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string{"'\\''"} : std::string{c};
  return out + "'";
}

/// Starts `argv` with its stdout and stderr on `out` (-1: this process's).
pid_t start(const std::vector<std::string>& argv, int out = -1) {
  std::vector<char*> raw;
  for (auto& a : argv)
    raw.push_back(const_cast<char*>(a.c_str()));
  raw.push_back(nullptr);
  // The children take signals as usual: troupe train blocks SIGINT and
  // SIGTERM in this process (interrupt.hpp), and a blocked mask would pass
  // on to them.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  if (out >= 0) {
    posix_spawn_file_actions_adddup2(&files, out, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&files, out, STDERR_FILENO);
  }
  pid_t pid = 0;
  auto rc = posix_spawnp(&pid, raw[0], &files, &attr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

struct child {
  std::string host;
  pid_t pid = 0;
  int status = -1;
};

/// Waits up to `grace` for the children to exit, then terminates the rest.
void reap(std::vector<child>& children, std::chrono::seconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  auto pending = [&] {
    bool any = false;
    for (auto& c : children) {
      if (c.status >= 0)
        continue;
      int st = 0;
      if (waitpid(c.pid, &st, WNOHANG) == c.pid)
        c.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      else
        any = true;
    }
    return any;
  };
  while (pending() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  for (auto& c : children)
    if (c.status < 0) {
      std::cerr << "troupe launch: node " << c.host << " (pid " << c.pid
                << ") did not exit; terminating it\n";
      kill(c.pid, SIGTERM);
      int st = 0;
      waitpid(c.pid, &st, 0);
      c.status = 128 + SIGTERM;
    }
}

constexpr const char* launch_usage
    = R"(usage: troupe launch (--local=M | --hosts=FILE | --launcher=L)
                    [launch flags] [train flags]

Runs troupe train --listen here and starts the job's nodes.
  --local=M               start M node processes on this host; the job's
                          workers are split evenly over them, shards stay here
  --hosts=FILE            one host[:slots] per line: start a node with that
                          many worker slots on each host over --rsh
  --launcher=L            this process is one of the job's, all started
                          alike by srun, mpirun or Kubernetes: rank 0 runs
                          the coordinator, the others join it as nodes, the
                          workers split evenly. L: auto (default with the
                          next flags), slurm, mpi, kubernetes, flags
  --rank=R --world-size=N this process's rank and the number of processes
                          (default: the launcher's variables)
  --coordinator=HOST[:PORT]
                          where rank 0 listens, as the others reach it
                          (default: from the launcher; docs/deployment.md)
  --explain               print this process's rank, role and where each
                          value came from, and exit
  --auto-resume           rank 0 continues --checkpoint-dir's latest complete
                          checkpoint if there is one (a restarted pod)
  --coordinator-grace=S   the nodes wait S seconds for a restarted rank 0
                          (troupe node --coordinator-grace)
  --rsh=CMD               remote shell for --hosts (default "ssh")
  --remote-troupe=PATH    troupe on the hosts (default "troupe")
  --advertise=HOST        the address nodes reach this host at (--hosts;
                          default: this host's name)
  --node-shards=N         shard slots each node offers (default 0: the
                          shards stay here)
  --direct-links=false    nodes do not link to each other: their traffic
                          goes through this process (default true)
Train flags as for troupe train (--listen defaults to 127.0.0.1:0 with
--local and 0.0.0.0:0 with --hosts; --expect is set for you).
)";

} // namespace

int launch_main(const std::vector<std::string>& args) {
  // The coordinator's lines read as troupe train's; the nodes' are
  // relayed as "troupe node N: ...".
  actors::detail::set_log_program("troupe train");
  std::uint64_t local = 0;
  std::string hosts_file, rsh = "ssh", remote = "troupe", advertise;
  std::string node_shards = "0", direct_links = "true";
  std::vector<std::string> rest;
  ranked_launch ranked;
  bool by_rank = false;
  for (const auto& a : args) {
    auto value = [&a](const char* flag) -> std::optional<std::string> {
      auto prefix = std::string{flag} + "=";
      if (a.rfind(prefix, 0) != 0)
        return std::nullopt;
      return a.substr(prefix.size());
    };
    if (a == "--help" || a == "-h") {
      std::cout << launch_usage;
      return 0;
    }
    if (auto v = value("--local")) {
      if (v->empty() || v->find_first_not_of("0123456789") != std::string::npos
          || v->size() > 4 || std::stoul(*v) == 0) {
        std::cerr << "troupe launch: --local must be a number from 1 to 9999\n";
        return 2;
      }
      local = std::stoul(*v);
    } else if (auto v = value("--hosts")) {
      hosts_file = *v;
    } else if (auto v = value("--launcher")) {
      ranked.flags.launcher = *v;
      by_rank = true;
    } else if (auto v = value("--rank")) {
      ranked.rank = *v;
      by_rank = true;
    } else if (auto v = value("--world-size")) {
      ranked.world_size = *v;
      by_rank = true;
    } else if (auto v = value("--coordinator")) {
      ranked.flags.coordinator = *v;
      by_rank = true;
    } else if (auto v = value("--coordinator-grace")) {
      ranked.coordinator_grace = *v;
      by_rank = true;
    } else if (a == "--auto-resume") {
      ranked.auto_resume = true;
      by_rank = true;
    } else if (a == "--explain") {
      ranked.explain = true;
      by_rank = true;
    } else if (auto v = value("--rsh")) {
      rsh = *v;
    } else if (auto v = value("--remote-troupe")) {
      remote = *v;
    } else if (auto v = value("--advertise")) {
      advertise = *v;
    } else if (auto v = value("--node-shards")) {
      if (v->empty() || v->find_first_not_of("0123456789") != std::string::npos
          || v->size() > 4 || std::stoul(*v) > 1024) {
        std::cerr << "troupe launch: --node-shards must be a number from 0 "
                     "to 1024\n";
        return 2;
      }
      node_shards = std::to_string(std::stoul(*v));
    } else if (auto v = value("--direct-links")) {
      if (*v != "true" && *v != "false") {
        std::cerr << "troupe launch: --direct-links must be true or false\n";
        return 2;
      }
      direct_links = *v;
    } else {
      rest.push_back(a);
    }
  }
  if (by_rank) {
    if (local > 0 || !hosts_file.empty()) {
      std::cerr << "troupe launch: --local and --hosts start their own "
                   "nodes; --launcher, --rank, --world-size, --coordinator "
                   "and --explain are for processes a launcher started\n";
      return 2;
    }
    ranked.node_shards = node_shards;
    ranked.direct_links = direct_links;
    return ranked_launch_main(std::move(ranked), std::move(rest));
  }
  return guarded_main("troupe launch", [&] {
    if ((local > 0) == !hosts_file.empty())
      throw usage_error(
          "troupe launch: give --local=M, --hosts=FILE or --launcher=auto");
    std::vector<host_entry> hosts;
    train_options o;
    if (!parse_launch_train_flags(rest, o, "--local/--hosts"))
      return 0;
    if (local > 0) {
      if (o.workers < local)
        throw usage_error("troupe launch: --local=" + std::to_string(local)
                          + " needs at least as many --workers");
      for (std::uint64_t n = 0; n < local; ++n)
        hosts.push_back(
            {"127.0.0.1", static_cast<std::uint32_t>(o.workers * (n + 1) / local
                                                     - o.workers * n / local)});
      if (o.listen.empty())
        o.listen = "127.0.0.1:0";
    } else {
      hosts = read_hostfile(hosts_file);
      if (o.listen.empty())
        o.listen = "0.0.0.0:0";
      if (advertise.empty()) {
        char name[256] = {};
        gethostname(name, sizeof(name) - 1);
        advertise = name;
      }
    }
    o.expect = hosts.size();
    std::vector<child> children;
    output_relay output;
    o.on_listening = [&](std::uint16_t port) {
      auto node_args = [&](const host_entry& h, const std::string& at) {
        std::vector<std::string> a{
            "node", "--join=" + at + ":" + std::to_string(port),
            "--workers=" + std::to_string(h.slots), "--shards=" + node_shards,
            "--direct-links=" + direct_links};
        for (auto& x : link_arguments(o.link))
          a.push_back(x);
        return a;
      };
      for (const auto& h : hosts) {
        std::vector<std::string> argv;
        if (local > 0) {
          argv.push_back("/proc/self/exe");
          for (auto& x : node_args(h, "127.0.0.1"))
            argv.push_back(x);
        } else {
          argv = split_words(rsh);
          argv.push_back(h.host);
          std::string command = shell_quote(remote);
          for (auto& x : node_args(h, advertise))
            command += " " + shell_quote(x);
          argv.push_back(command);
        }
        auto name = local > 0 ? std::to_string(children.size() + 1) : h.host;
        int out = output.open(name);
        children.push_back({h.host, start(argv, out)});
        ::close(out);
      }
    };
    int status = 0;
    try {
      status = train_main_with(o);
    } catch (...) {
      reap(children, std::chrono::seconds{10});
      output.stop(std::chrono::seconds{1});
      throw;
    }
    reap(children, std::chrono::seconds{10});
    output.stop(std::chrono::seconds{1});
    for (auto& c : children)
      if (c.status != 0)
        std::cerr << "troupe launch: node " << c.host << " (pid " << c.pid
                  << ") exited with status " << c.status << '\n';
    return status;
  });
}

} // namespace troupe::apps

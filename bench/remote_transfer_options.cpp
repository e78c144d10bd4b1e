// Command-line options of bench/remote_transfer (remote_transfer.hpp).

#include <stdexcept>
#include <string>

#include "bench/remote_transfer.hpp"

namespace troupe::bench {

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
      throw std::invalid_argument("expected --name=value, got " + arg);
    auto key = arg.substr(2, eq - 2);
    auto val = arg.substr(eq + 1);
    auto num = [&] { return std::stoul(val); };
    if (key == "role")
      o.role = val;
    else if (key == "port")
      o.port = static_cast<std::uint16_t>(num());
    else if (key == "bytes")
      o.bytes = num();
    else if (key == "chunk")
      o.chunk = num();
    else if (key == "inflight")
      o.inflight = num();
    else if (key == "reps")
      o.reps = num();
    else if (key == "warmup")
      o.warmup = num();
    else if (key == "rtt-iters")
      o.rtt_iters = num();
    else if (key == "policy")
      o.policy = val;
    else if (key == "mm-workers")
      o.mm_workers = std::stol(val);
    else if (key == "mcr")
      o.mcr = std::stol(val);
    else if (key == "threads")
      o.threads = std::stol(val);
    else if (key == "tls")
      o.tls_dir = val;
    else if (key == "iperf3")
      o.iperf3 = val;
    else if (key == "tls-material")
      o.tls_material = val;
    else if (key == "rounds")
      o.rounds = num();
    else if (key == "only")
      o.only = val;
    else if (key == "phase-timeout")
      o.phase_timeout = std::stod(val);
    else
      throw std::invalid_argument("unknown option --" + key);
  }
  if (o.chunk == 0 || o.bytes % o.chunk != 0 || o.chunk % 4 != 0
      || o.inflight == 0 || o.reps == 0 || o.rtt_iters == 0)
    throw std::invalid_argument("bytes must be a positive multiple of chunk, "
                                "chunk of 4; inflight, reps, rtt-iters > 0");
  return o;
}

} // namespace troupe::bench

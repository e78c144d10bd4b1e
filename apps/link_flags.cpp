#include "apps/link_flags.hpp"

#include <sstream>

namespace troupe::apps {

void add_link_options(option_parser& p, link_flags& f) {
  p.add(f.token, "token",
        "join token: nodes must present the coordinator's (see also "
        "--token-file)")
      .add(f.token_file, "token-file",
           "read the join token from the first line of FILE")
      .add(f.tls_cert, "tls-cert",
           "this process's PEM certificate: with --tls-key and --tls-ca every "
           "link is TLS and peers need a certificate from that CA")
      .add(f.tls_key, "tls-key", "the certificate's PEM private key")
      .add(f.tls_ca, "tls-ca", "the PEM CA certificate that signs every node")
      .add(f.heartbeat, "heartbeat",
           "seconds between middleman heartbeats (default 0.2; equal on "
           "every process)")
      .add(f.node_timeout, "node-timeout",
           "seconds of silence before a peer is declared dead (default 2; "
           "equal on every process)")
      .add(f.join_timeout, "join-timeout",
           "seconds to wait for nodes to join / to reach the coordinator "
           "(default 60)")
      .add(f.shm, "shm",
           "send parameters and gradients to processes on this host "
           "through shared memory (default true; TROUPE_SHM=0 in the "
           "environment turns it off too)");
}

net::link_options link_settings(const link_flags& f,
                                const std::string& command) {
  net::link_options o;
  o.heartbeat = f.heartbeat;
  o.node_timeout = f.node_timeout;
  o.tls = {f.tls_cert, f.tls_key, f.tls_ca};
  o.shm = f.shm;
  if (!f.token.empty() && !f.token_file.empty())
    throw usage_error(command + ": give --token or --token-file, not both");
  try {
    o.token
        = f.token_file.empty() ? f.token : net::read_token_file(f.token_file);
    net::validate(o);
  } catch (const std::invalid_argument& e) {
    throw usage_error(command + ": " + e.what());
  }
  if (!(f.join_timeout > 0 && f.join_timeout <= 86400))
    throw usage_error(command + ": --join-timeout must be in (0, 86400]");
  return o;
}

std::vector<std::string> link_arguments(const link_flags& f) {
  auto num = [](double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  };
  std::vector<std::string> out{"--heartbeat=" + num(f.heartbeat),
                               "--node-timeout=" + num(f.node_timeout),
                               "--join-timeout=" + num(f.join_timeout)};
  if (!f.shm)
    out.push_back("--shm=false");
  if (!f.token.empty())
    out.push_back("--token=" + f.token);
  if (!f.token_file.empty())
    out.push_back("--token-file=" + f.token_file);
  if (!f.tls_cert.empty())
    out.push_back("--tls-cert=" + f.tls_cert);
  if (!f.tls_key.empty())
    out.push_back("--tls-key=" + f.tls_key);
  if (!f.tls_ca.empty())
    out.push_back("--tls-ca=" + f.tls_ca);
  return out;
}

} // namespace troupe::apps

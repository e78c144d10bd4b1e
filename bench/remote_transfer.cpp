// Remote transfer through CAF's middleman between two processes on loopback,
// next to plain TCP in the same run: push and pull of a 16 MB parameter range
// (push_msg / fetch_msg + params_msg, floats as raw tensor blocks) against
// iperf3 and a raw socket bulk transfer, and a tiny request/response round
// trip against a raw TCP ping-pong (TCP_NODELAY), plain and over TLS.
//
// The driver (default role) runs `rounds` rounds; each runs iperf3 (when
// --iperf3 is given), the raw TCP baselines against a raw-server child, and
// every configuration as a pair of fresh processes (this binary re-executed
// as --role=server and --role=client with the configuration's options).
// Medians are over all rounds. Every child dies with the driver, every phase
// and every socket operation has a timeout. Prints one JSON object on stdout.
//
//   remote_transfer [--iperf3=PATH] [--tls-material=DIR] [--rounds=3]
//                   [--reps=8] [--rtt-iters=2000] [--only=NAME]
//   bench/remote_transfer.sh     # installs iperf3, makes certificates, runs

#include "bench/remote_transfer.hpp"

#include <cmath>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/remote_transfer_net.hpp"

namespace troupe::bench {

namespace {

using json = nlohmann::ordered_json;

// -- raw TCP: the server child and the driver's client ----------------------

/// Serves bulk ('B' n: read n bytes, ack one byte; 'R' n: write n bytes) and
/// ping-pong ('P' n: echo n messages of 16 bytes) on one connection after
/// another until killed or idle for a minute.
int run_raw_server(const options& opts) {
  std::uint16_t port = 0;
  auto listener = listen_loopback(opts.port, port);
  std::cout << "port " << port << std::endl;
  std::vector<char> buf(opts.bytes);
  for (;;) {
    auto conn = accept_one(listener.get(), 60'000, opts.io_timeout);
    char cmd = 0;
    std::uint64_t n = 0;
    while (recv_all(conn.get(), &cmd, 1)) {
      recv_all(conn.get(), &n, sizeof n);
      if (cmd == 'B') {
        buf.resize(std::max<std::size_t>(buf.size(), n));
        recv_all(conn.get(), buf.data(), n);
        send_all(conn.get(), "k", 1);
      } else if (cmd == 'R') {
        buf.resize(std::max<std::size_t>(buf.size(), n));
        send_all(conn.get(), buf.data(), n);
      } else if (cmd == 'P') {
        char msg[16];
        for (std::uint64_t i = 0; i < n; ++i) {
          recv_all(conn.get(), msg, sizeof msg);
          send_all(conn.get(), msg, sizeof msg);
        }
      } else {
        return 2;
      }
    }
  }
}

void send_cmd(int fd, char cmd, std::uint64_t n) {
  send_all(fd, &cmd, 1);
  send_all(fd, &n, sizeof n);
}

/// Times raw bulk pushes and pulls of `bytes` and 16-byte ping-pongs against
/// a fresh raw-server child; appends to `push_s`, `pull_s` and `rtt_us`.
void raw_round(const options& o, std::vector<double>& push_s,
               std::vector<double>& pull_s, std::vector<double>& rtt_us) {
  child_process child({self_exe(), "--role=raw-server"}, true);
  std::string line;
  if (!child.read_line(line, 30) || line.rfind("port ", 0) != 0)
    throw std::runtime_error("raw-server did not start");
  auto port = static_cast<std::uint16_t>(std::stoul(line.substr(5)));
  auto conn = connect_loopback(port, o.io_timeout);
  std::vector<char> buf(o.bytes, 'x');
  for (std::size_t r = 0; r < o.warmup + o.reps; ++r) {
    auto t0 = clock_type::now();
    send_cmd(conn.get(), 'B', o.bytes);
    send_all(conn.get(), buf.data(), buf.size());
    char ack = 0;
    recv_all(conn.get(), &ack, 1);
    auto t1 = clock_type::now();
    send_cmd(conn.get(), 'R', o.bytes);
    recv_all(conn.get(), buf.data(), buf.size());
    if (r >= o.warmup) {
      push_s.push_back(std::chrono::duration<double>(t1 - t0).count());
      pull_s.push_back(seconds_since(t1));
    }
  }
  std::vector<double> samples;
  send_cmd(conn.get(), 'P', o.rtt_iters);
  for (std::size_t i = 0; i < o.rtt_iters; ++i) {
    char msg[16] = {};
    auto t0 = clock_type::now();
    send_all(conn.get(), msg, sizeof msg);
    recv_all(conn.get(), msg, sizeof msg);
    if (i >= o.rtt_iters / 10)
      samples.push_back(seconds_since(t0) * 1e6);
  }
  rtt_us.push_back(median(std::move(samples)));
}

// -- iperf3 -------------------------------------------------------------------

/// Runs one iperf3 client against a one-off iperf3 server for 2 s; returns
/// the receiver's GB/s (1e9 bytes), or NaN on failure.
double iperf3_round(const std::string& iperf3) {
  auto port = std::to_string(free_port());
  child_process server({iperf3, "-s", "-1", "-p", port}, false);
  for (int attempt = 0; attempt < 30; ++attempt) {
    ::usleep(100'000);
    child_process client(
        {iperf3, "-c", "127.0.0.1", "-p", port, "-t", "2", "-J"}, true);
    std::string out;
    if (!client.read_all(out, 30) || client.wait(5) != 0)
      continue;
    auto doc = json::parse(out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("end"))
      continue;
    return doc["end"]["sum_received"]["bits_per_second"].get<double>() / 8e9;
  }
  return std::nan("");
}

// -- CAF phases ---------------------------------------------------------------

/// One measured configuration: CAF options on both processes and the
/// transfer plan of the client.
struct phase {
  phase(std::string n, std::string pol, long w, long m, std::size_t c,
        std::size_t k, bool t)
      : name(std::move(n)), policy(std::move(pol)), mm_workers(w), mcr(m),
        chunk(c), inflight(k), tls(t) {}

  std::string name;
  std::string policy; // "" = CAF default (stealing)
  long mm_workers;    // -1 = CAF default (1 on 2 cores)
  long mcr;           // -1 = CAF default (50)
  std::size_t chunk;
  std::size_t inflight;
  bool tls;
  // Results over all rounds.
  std::vector<double> push_s, pull_s, rtt_us;
  std::vector<std::string> errors;
};

constexpr std::size_t MB = std::size_t{1} << 20;

std::vector<phase> make_phases(const options& o) {
  std::vector<phase> plain{
      {"default_16m", "", -1, -1, 16 * MB, 1, false},
      {"sharing_w0_16m", "sharing", 0, -1, 16 * MB, 1, false},
      {"sharing_w0_4m_x4", "sharing", 0, -1, 4 * MB, 4, false},
      {"sharing_w0_1m_x4", "sharing", 0, -1, 1 * MB, 4, false},
      {"sharing_w1_4m_x4", "sharing", 1, -1, 4 * MB, 4, false},
      {"stealing_w1_4m_x4", "", -1, -1, 4 * MB, 4, false},
      {"sharing_w0_4m_x4_mcr1000", "sharing", 0, 1000, 4 * MB, 4, false},
  };
  std::vector<phase> result;
  for (auto& p : plain) {
    result.push_back(p);
    if (!o.tls_material.empty()
        && (p.name == "default_16m" || p.name == "sharing_w0_4m_x4")) {
      p.name = "tls_" + p.name;
      p.tls = true;
      result.push_back(p);
    }
  }
  if (!o.only.empty())
    result.erase(std::remove_if(result.begin(), result.end(),
                                [&](const phase& p) {
                                  return p.name.find(o.only)
                                         == std::string::npos;
                                }),
                 result.end());
  for (auto& p : result)
    p.chunk = std::min(p.chunk, o.bytes);
  return result;
}

std::vector<std::string> phase_args(const options& o, const phase& p,
                                    const std::string& role,
                                    std::uint16_t port) {
  std::vector<std::string> args{self_exe(),
                                "--role=" + role,
                                "--port=" + std::to_string(port),
                                "--bytes=" + std::to_string(o.bytes),
                                "--chunk=" + std::to_string(p.chunk),
                                "--inflight=" + std::to_string(p.inflight),
                                "--reps=" + std::to_string(o.reps),
                                "--warmup=" + std::to_string(o.warmup),
                                "--rtt-iters=" + std::to_string(o.rtt_iters)};
  if (!p.policy.empty())
    args.push_back("--policy=" + p.policy);
  if (p.mm_workers >= 0)
    args.push_back("--mm-workers=" + std::to_string(p.mm_workers));
  if (p.mcr > 0)
    args.push_back("--mcr=" + std::to_string(p.mcr));
  if (p.tls)
    args.push_back("--tls=" + o.tls_material);
  return args;
}

/// Runs one server/client pair of processes for `p` and appends its samples.
void caf_round(const options& o, phase& p) {
  child_process server(phase_args(o, p, "server", 0), true);
  std::string line;
  if (!server.read_line(line, 30) || line.rfind("port ", 0) != 0) {
    p.errors.push_back("server did not publish");
    return;
  }
  auto port = static_cast<std::uint16_t>(std::stoul(line.substr(5)));
  child_process client(phase_args(o, p, "client", port), true);
  std::string out;
  if (!client.read_all(out, o.phase_timeout)) {
    p.errors.push_back("client timed out after "
                       + std::to_string(o.phase_timeout) + " s");
    return;
  }
  auto last = out.find_last_of('\n', out.size() > 1 ? out.size() - 2 : 0);
  auto doc = json::parse(last == std::string::npos ? out : out.substr(last),
                         nullptr, false);
  int status = client.wait(5);
  if (doc.is_discarded() || !doc.is_object()) {
    p.errors.push_back("client printed no result, exit status "
                       + std::to_string(status));
    return;
  }
  for (double x : doc["push_s"])
    p.push_s.push_back(x);
  for (double x : doc["pull_s"])
    p.pull_s.push_back(x);
  if (doc["rtt_us_median"].get<double>() > 0)
    p.rtt_us.push_back(doc["rtt_us_median"].get<double>());
  if (doc.contains("error"))
    p.errors.push_back(doc["error"].get<std::string>());
  if (status == -1)
    p.errors.push_back("client hung on shutdown (killed)");
  if (server.wait(5) == -1)
    p.errors.push_back("server hung on shutdown (killed)");
}

json nullable(double x) {
  return std::isfinite(x) && x > 0 ? json(x) : json(nullptr);
}

double gbps(std::size_t bytes, const std::vector<double>& secs) {
  return secs.empty() ? std::nan("") : bytes / median(secs) / 1e9;
}

int run_driver(const options& o) {
  auto phases = make_phases(o);
  std::vector<double> iperf3, raw_push, raw_pull, raw_rtt;
  for (std::size_t round = 0; round < o.rounds; ++round) {
    if (!o.iperf3.empty()) {
      std::cerr << "remote_transfer: round " << round << ": iperf3\n";
      iperf3.push_back(iperf3_round(o.iperf3));
    }
    std::cerr << "remote_transfer: round " << round << ": raw tcp\n";
    raw_round(o, raw_push, raw_pull, raw_rtt);
    for (auto& p : phases) {
      std::cerr << "remote_transfer: round " << round << ": " << p.name << '\n';
      caf_round(o, p);
    }
  }
  std::vector<double> iperf3_ok;
  for (double x : iperf3)
    if (std::isfinite(x))
      iperf3_ok.push_back(x);
  double ip = iperf3_ok.empty() ? std::nan("") : median(iperf3_ok);
  double raw_gbps = gbps(o.bytes, raw_push);
  double raw_rtt_us = median(raw_rtt);
  json configs = json::array();
  const phase* best[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};
  auto score = [&](const phase& p) {
    return std::sqrt(gbps(o.bytes, p.push_s) * gbps(o.bytes, p.pull_s));
  };
  for (auto& p : phases) {
    double push = gbps(o.bytes, p.push_s);
    double pull = gbps(o.bytes, p.pull_s);
    double rtt = p.rtt_us.empty() ? std::nan("") : median(p.rtt_us);
    configs.push_back(
        {{"name", p.name},
         {"tls", p.tls},
         {"scheduler.policy", p.policy.empty() ? "stealing" : p.policy},
         {"middleman.workers",
          p.mm_workers < 0 ? json("default(1)") : json(p.mm_workers)},
         {"middleman.max-consecutive-reads",
          p.mcr < 0 ? json("default(50)") : json(p.mcr)},
         {"chunk_bytes", p.chunk},
         {"inflight", p.inflight},
         {"push_gbps", nullable(push)},
         {"pull_gbps", nullable(pull)},
         {"push_vs_iperf3", nullable(push / ip)},
         {"pull_vs_iperf3", nullable(pull / ip)},
         {"push_vs_raw_tcp", nullable(push / raw_gbps)},
         {"rtt_us", nullable(rtt)},
         {"rtt_ratio", nullable(rtt / raw_rtt_us)},
         {"samples", p.push_s.size()},
         {"errors", p.errors}});
    auto& b = best[p.tls ? 1 : 0];
    if (std::isfinite(score(p)) && (!b[0] || score(p) > score(*b[0])))
      b[0] = &p;
    if (std::isfinite(rtt) && (!b[1] || rtt < median(b[1]->rtt_us)))
      b[1] = &p;
  }
  auto headline = [&](int tls) {
    json h;
    const phase* t = best[tls][0];
    const phase* l = best[tls][1];
    double push = t ? gbps(o.bytes, t->push_s) : std::nan("");
    double pull = t ? gbps(o.bytes, t->pull_s) : std::nan("");
    double rtt = l ? median(l->rtt_us) : std::nan("");
    h["push_gbps"] = nullable(push);
    h["pull_gbps"] = nullable(pull);
    h["push_vs_iperf3"] = nullable(push / ip);
    h["pull_vs_iperf3"] = nullable(pull / ip);
    h["rtt_us"] = {{"caf", nullable(rtt)}, {"raw_tcp", nullable(raw_rtt_us)}};
    h["rtt_ratio"] = nullable(rtt / raw_rtt_us);
    h["config"] = {{"transfer", t ? json(t->name) : json(nullptr)},
                   {"rtt", l ? json(l->name) : json(nullptr)}};
    return h;
  };
  json out{{"bench", "remote_transfer"}, {"bytes", o.bytes}};
  out["iperf3_gbps"] = nullable(ip);
  out["raw_tcp_gbps"] = nullable(raw_gbps);
  out["raw_tcp_pull_gbps"] = nullable(gbps(o.bytes, raw_pull));
  out["raw_tcp_vs_iperf3"] = nullable(raw_gbps / ip);
  auto plain = headline(0);
  for (auto& [key, value] : plain.items())
    out[key] = value;
  if (!o.tls_material.empty())
    out["tls"] = headline(1);
  out["targets"] = {{"transfer_vs_iperf3_min", 0.8}, {"rtt_ratio_max", 10}};
  out["rounds"] = o.rounds;
  out["reps_per_round"] = o.reps;
  out["rtt_iters"] = o.rtt_iters;
  out["iperf3_samples"] = iperf3;
  out["configs"] = configs;
  std::cout << out.dump() << std::endl;
  return 0;
}

} // namespace

} // namespace troupe::bench

int main(int argc, char** argv) {
  using namespace troupe::bench;
  try {
    auto opts = parse_options(argc, argv);
    if (opts.role == "driver")
      return run_driver(opts);
    if (opts.role == "server")
      return run_caf_server(opts);
    if (opts.role == "client")
      return run_caf_client(opts);
    if (opts.role == "raw-server")
      return run_raw_server(opts);
    std::cerr << "remote_transfer: unknown role " << opts.role << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "remote_transfer: " << e.what() << '\n';
    return 1;
  }
}

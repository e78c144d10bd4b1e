// The two CAF roles of the remote_transfer benchmark (see remote_transfer.cpp
// for the driver). Both processes register the project's message types, so
// push_msg, fetch_msg and params_msg cross BASP exactly as in a job: the
// floats as one raw tensor block each.
//
// server: holds a parameter range of `bytes`; acks each push_msg with its
//   element count, answers fetch_msg with a params_msg copied from the range
//   (as a shard does), echoes (echo_atom, n), and quits on stop_atom.
// client: one event-based actor times
//   push: the range cut into push_msg chunks, `inflight` requests at a time,
//         from the first send to the last ack (chunks are built untimed);
//   pull: fetch_msg per chunk, `inflight` at a time, to the last params_msg
//         (every pulled value is checked against the server's pattern);
//   rtt:  one tiny request/response at a time.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <nlohmann/json.hpp>

#include "bench/remote_transfer.hpp"
#include "bench/remote_transfer_net.hpp"
#include "messages/atoms.hpp"
#include "messages/messages.hpp"
#include "messages/registry.hpp"

namespace troupe::bench {

namespace {

using namespace troupe::messages;

using push_cmd_atom = caf::atom_constant<caf::atom("bpush")>;
using pull_cmd_atom = caf::atom_constant<caf::atom("bpull")>;
using rtt_cmd_atom = caf::atom_constant<caf::atom("brtt")>;

constexpr auto request_timeout = std::chrono::seconds(30);

/// The value the server holds at coordinate i (exact in binary32).
float pattern(std::size_t i) {
  return static_cast<float>(i % 65521) * 0.25f - 7.0f;
}

struct caf_config : caf::actor_system_config {
  explicit caf_config(const options& o) {
    register_types(*this);
    load<caf::io::middleman>();
    if (!o.tls_dir.empty()) {
      load<caf::openssl::manager>();
      set("openssl.certificate", o.tls_dir + "/cert.pem");
      set("openssl.key", o.tls_dir + "/key.pem");
      set("openssl.cafile", o.tls_dir + "/ca.pem");
    }
    set("scheduler.max-threads", static_cast<std::size_t>(o.threads));
    if (!o.policy.empty())
      set("scheduler.policy", caf::atom_from_string(o.policy));
    if (o.mm_workers >= 0)
      set("middleman.workers", static_cast<std::size_t>(o.mm_workers));
    if (o.mcr > 0)
      set("middleman.max-consecutive-reads", static_cast<std::size_t>(o.mcr));
    set("logger.console", caf::atom("none"));
  }
};

caf::behavior server_actor(caf::event_based_actor* self,
                           std::shared_ptr<const std::vector<float>> params) {
  return {
      [](const push_msg& p) { return std::uint64_t{p.values.size()}; },
      [params](const fetch_msg& f) -> caf::result<params_msg> {
        if (f.offset > params->size() || f.size > params->size() - f.offset)
          return caf::sec::invalid_argument;
        params_msg reply;
        reply.version = 1;
        reply.offset = f.offset;
        reply.values = tensor{params->data() + f.offset,
                              static_cast<std::size_t>(f.size)};
        return reply;
      },
      [](echo_atom, std::uint64_t x) { return x; },
      [self](stop_atom) { self->quit(); },
  };
}

/// The client actor's run: what it measures now and the samples so far.
/// Functions capture a raw pointer: the state outlives the actor.
struct client_state {
  caf::event_based_actor* self = nullptr;
  caf::actor server;
  options opts;
  std::size_t chunks = 0;
  std::size_t chunk_elems = 0;
  std::size_t rep = 0;
  std::size_t warmup = 0;
  std::size_t total = 0;
  std::size_t next = 0;
  std::size_t done = 0;
  std::vector<push_msg> staged;
  std::vector<tensor> pulled;
  clock_type::time_point t0;
  std::vector<double> samples;
  caf::response_promise rp;
  std::string error;
  bool failed = false;

  caf::response_promise start(std::size_t warmup_reps, std::size_t n) {
    rep = 0;
    warmup = warmup_reps;
    total = warmup_reps + n;
    samples.clear();
    rp = self->make_response_promise();
    return rp;
  }

  void fail(std::string what) {
    if (failed)
      return;
    failed = true;
    error = std::move(what);
    rp.deliver(false);
  }

  std::function<void(caf::error&)> on_error() {
    return [this](caf::error& err) { fail(self->system().render(err)); };
  }

  /// Records one repetition (unless warm-up); returns whether more follow.
  bool end_rep(double sample) {
    if (rep++ >= warmup)
      samples.push_back(sample);
    if (rep < total)
      return true;
    rp.deliver(true);
    return false;
  }

  // -- push: chunks built untimed, then `inflight` requests at a time --------

  void push_rep() {
    staged.assign(chunks, push_msg{});
    for (std::size_t c = 0; c < chunks; ++c) {
      auto& m = staged[c];
      m.worker = 1;
      m.seq = rep * chunks + c;
      m.offset = c * chunk_elems;
      m.samples = 64;
      std::vector<float> v(chunk_elems);
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = pattern(m.offset + i);
      m.values = tensor{std::move(v)};
    }
    next = done = 0;
    t0 = clock_type::now();
    for (std::size_t i = 0; i < opts.inflight && i < chunks; ++i)
      send_push();
  }

  void send_push() {
    auto c = next++;
    self->request(server, request_timeout, std::move(staged[c]))
        .then(
            [this](std::uint64_t n) {
              if (failed)
                return;
              if (n != chunk_elems)
                return fail("server acked a push of another size");
              if (++done == chunks) {
                if (end_rep(seconds_since(t0)))
                  push_rep();
              } else if (next < chunks) {
                send_push();
              }
            },
            on_error());
  }

  // -- pull: fetch_msg per chunk, `inflight` at a time; values checked -------

  void pull_rep() {
    pulled.assign(chunks, tensor{});
    next = done = 0;
    t0 = clock_type::now();
    for (std::size_t i = 0; i < opts.inflight && i < chunks; ++i)
      send_fetch();
  }

  void send_fetch() {
    auto c = next++;
    fetch_msg f{1, c * chunk_elems, chunk_elems, 0};
    self->request(server, request_timeout, f)
        .then(
            [this, c](params_msg& p) {
              if (failed)
                return;
              if (p.offset != c * chunk_elems || p.values.size() != chunk_elems)
                return fail("params_msg of another range");
              pulled[c] = std::move(p.values);
              if (++done < chunks) {
                if (next < chunks)
                  send_fetch();
                return;
              }
              auto t = seconds_since(t0);
              for (std::size_t k = 0; k < chunks; ++k)
                for (std::size_t i = 0; i < chunk_elems; ++i)
                  if (pulled[k][i] != pattern(k * chunk_elems + i))
                    return fail("pulled values differ from the server's");
              if (end_rep(t))
                pull_rep();
            },
            on_error());
  }

  // -- round trips: one tiny request at a time --------------------------------

  void ping() {
    t0 = clock_type::now();
    self->request(server, request_timeout, echo_atom::value, std::uint64_t{rep})
        .then(
            [this](std::uint64_t x) {
              if (failed)
                return;
              if (x != rep)
                return fail("echo of another value");
              if (end_rep(seconds_since(t0) * 1e6))
                ping();
            },
            on_error());
  }
};

caf::behavior client_actor(caf::event_based_actor* self, client_state* st) {
  st->self = self;
  return {
      [st](push_cmd_atom) {
        auto rp = st->start(st->opts.warmup, st->opts.reps);
        st->push_rep();
        return rp;
      },
      [st](pull_cmd_atom) {
        auto rp = st->start(st->opts.warmup, st->opts.reps);
        st->pull_rep();
        return rp;
      },
      [st](rtt_cmd_atom) {
        auto rp = st->start(st->opts.rtt_iters / 10, st->opts.rtt_iters);
        st->ping();
        return rp;
      },
  };
}

double percentile(std::vector<double> xs, double q) {
  if (xs.empty())
    return 0;
  std::sort(xs.begin(), xs.end());
  return xs[static_cast<std::size_t>(q * static_cast<double>(xs.size() - 1))];
}

} // namespace

int run_caf_server(const options& opts) {
  caf_config cfg{opts};
  caf::actor_system sys{cfg};
  auto params = std::make_shared<std::vector<float>>(opts.bytes / 4);
  for (std::size_t i = 0; i < params->size(); ++i)
    (*params)[i] = pattern(i);
  auto srv = sys.spawn(server_actor, std::move(params));
  auto port = opts.tls_dir.empty()
                  ? sys.middleman().publish(srv, opts.port, "127.0.0.1")
                  : caf::openssl::publish(srv, opts.port, "127.0.0.1");
  if (!port) {
    std::cerr << "remote_transfer server: publish failed: "
              << sys.render(port.error()) << std::endl;
    caf::anon_send_exit(srv, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::cout << "port " << *port << std::endl;
  caf::scoped_actor self{sys};
  self->monitor(srv);
  self->receive([](const caf::down_msg&) {},
                caf::after(std::chrono::minutes(10)) >> [] {});
  caf::anon_send_exit(srv, caf::exit_reason::user_shutdown);
  return 0;
}

int run_caf_client(const options& opts) {
  caf_config cfg{opts};
  caf::actor_system sys{cfg};
  auto t0 = clock_type::now();
  auto server = opts.tls_dir.empty()
                    ? sys.middleman().remote_actor("127.0.0.1", opts.port)
                    : caf::openssl::remote_actor(sys, "127.0.0.1", opts.port);
  if (!server) {
    std::cerr << "remote_transfer client: connect failed: "
              << sys.render(server.error()) << std::endl;
    return 1;
  }
  auto connect_ms = seconds_since(t0) * 1e3;
  auto st = std::make_shared<client_state>();
  st->server = *server;
  st->opts = opts;
  st->chunk_elems = opts.chunk / 4;
  st->chunks = opts.bytes / opts.chunk;
  auto client = sys.spawn(client_actor, st.get());
  caf::scoped_actor self{sys};
  auto run = [&](auto cmd) {
    bool ok = false;
    self->request(client, std::chrono::minutes(5), cmd)
        .receive([&](bool x) { ok = x; },
                 [&](caf::error& err) { st->error = sys.render(err); });
    return ok ? std::move(st->samples) : std::vector<double>{};
  };
  nlohmann::ordered_json out;
  out["connect_ms"] = connect_ms;
  auto push = run(push_cmd_atom::value);
  auto pull = push.empty() ? push : run(pull_cmd_atom::value);
  auto rtt = pull.empty() ? pull : run(rtt_cmd_atom::value);
  out["push_s"] = push;
  out["pull_s"] = pull;
  out["rtt_us_median"] = median(rtt);
  out["rtt_us_p90"] = percentile(rtt, 0.9);
  if (!st->error.empty())
    out["error"] = st->error;
  self->send(*server, stop_atom::value);
  self->send_exit(client, caf::exit_reason::user_shutdown);
  std::cout << out.dump() << std::endl;
  return st->error.empty() ? 0 : 1;
}

} // namespace troupe::bench

// (c) The user's own actor with a probe, shown on the dashboard.
//
// A Downpour job on a synthetic least-squares problem runs with monitoring
// (the dashboard and Prometheus metrics over HTTP, as `troupe train
// --monitor`), next to an actor of the application's own: a tally that a job
// observer tells about every step. The tally carries a probe, so the
// dashboard lists it with its messages, its mailbox and a gauge of its own.
//
//   own_actor_probe [steps-per-worker] [seconds-to-keep-serving]
//
// Prints the dashboard's URL, then the tally as the dashboard sees it
// ("dashboard lists step_tally: N messages"); exits 0 if it was listed.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>
#include <troupe/troupe.hpp>

#include <caf/all.hpp>

using namespace troupe;

// [snippet:probed-actor]
/// An application actor: counts the steps it is told about. Its probe
/// counts and times every message and keeps a gauge.
caf::behavior step_tally(caf::event_based_actor* self) {
  auto probe = std::make_shared<actors::probe_ref>(
      actors::make_probe(self, "step_tally", "app", false));
  auto total = std::make_shared<std::uint64_t>(0);
  return {
      [self, probe, total](std::uint64_t samples) {
        auto scope = actors::on_message(
            probe->get(), self, actors::msg_type::other, sizeof samples);
        *total += samples;
        (*probe)->gauge("samples", static_cast<double>(*total));
        (*probe)->progress();
      },
      // Answered after every step sent before the request.
      [total](caf::get_atom) { return *total; },
  };
}

/// Tells the tally about every step (observers must not block: a send
/// does not).
struct tell_tally : actors::job_observer {
  explicit tell_tally(caf::actor tally) : tally(std::move(tally)) {}
  void on_step(const actors::step_event& e) override {
    caf::anon_send(tally, e.samples);
  }
  caf::actor tally;
};
// [/snippet]

int main(int argc, char** argv) {
  std::uint64_t steps = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000;
  int hold = argc > 2 ? std::atoi(argv[2]) : 0;
  const std::uint64_t seed = 7;
  std::cout << "own_actor_probe: seed " << seed << std::endl;
  optim::lsq_options problem;
  problem.m = 2048;
  problem.d = 50;
  problem.seed = seed;
  auto p = std::make_shared<const optim::lsq_problem>(optim::make_lsq(problem));

  // [snippet:monitored-job]
  net::link_config cfg{net::link_options{}, 0};
  caf::actor_system sys{cfg};
  auto tally = sys.spawn(step_tally);

  auto monitor = std::make_shared<net::job_monitor>();
  monitor->set_algo("downpour");
  net::http_options http; // 127.0.0.1, any free port
  http.public_paths = net::job_monitor::public_paths();
  net::http_server server{http, monitor->routes()};
  std::cout << "dashboard at http://127.0.0.1:" << server.port() << "/"
            << std::endl;

  actors::job_config job;
  job.algorithm = algos::make_algorithm("downpour");
  job.workers = 2;
  job.init = std::make_shared<const std::vector<float>>(problem.d, 0.0f);
  job.make_replica = [p, m = problem.m](messages::worker_id w) {
    std::vector<std::size_t> mine;
    for (std::size_t i = w; i < m; i += 2)
      mine.push_back(i);
    return std::make_unique<optim::synthetic_replica<optim::lsq_problem>>(
        p, mine, 16, seed + w);
  };
  job.steps_per_worker = steps;
  job.server.lr = 0.01;
  job.observers = {monitor, std::make_shared<tell_tally>(tally)};
  job.monitor = monitor->view(); // the coordinator polls every probe
  job.monitor_interval = std::chrono::milliseconds{50};
  job.node_name = net::process_name();
  auto result
      = actors::run_job_in(sys, std::move(job), std::chrono::minutes{5});
  // [/snippet]

  // The job's monitor took its last snapshot as the job ended, perhaps
  // before the tally had read its mailbox. Once the tally answers it has
  // seen every step: one more snapshot of this process's probes.
  {
    caf::scoped_actor self{sys};
    auto here = sys.spawn(actors::node_monitor, net::process_name());
    self->request(tally, std::chrono::seconds{10}, caf::get_atom::value)
        .receive([](std::uint64_t) {}, [](caf::error&) {});
    self->request(here, std::chrono::seconds{10}, messages::metrics_atom::value)
        .receive([&](messages::node_metrics& m) { monitor->view()->update(m); },
                 [](caf::error&) {});
    caf::anon_send_exit(here, caf::exit_reason::user_shutdown);
  }
  std::this_thread::sleep_for(std::chrono::seconds{hold});
  std::cout << "job: " << result.value("stop_reason", "?") << std::endl;
  caf::anon_send_exit(tally, caf::exit_reason::user_shutdown);
  // What the dashboard shows (GET /api/cluster): is the tally listed?
  auto cluster = monitor->cluster();
  for (auto& a : cluster["actors"])
    if (a.value("name", "") == "step_tally") {
      std::cout << "dashboard lists step_tally: " << a["messages_in"]
                << " messages, gauges " << a["gauges"] << std::endl;
      return 0;
    }
  std::cerr << "own_actor_probe: step_tally is not on the dashboard\n";
  return 1;
}

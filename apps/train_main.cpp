// troupe train's entry point: parse, run under the signal watch, print.

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>

#include "actors/detail/log.hpp"
#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"
#include "apps/interrupt.hpp"
#include "apps/terminal.hpp"
#include "apps/train_command.hpp"

namespace troupe::apps {

std::string summary_line(const nlohmann::json& result,
                         const std::string& program) {
  const auto& acc = result.value("test_accuracy", nlohmann::json{});
  std::string out = program + ": " + result.value("stop_reason", "done")
                    + ": test accuracy "
                    + (acc.is_number() ? fixed(acc.get<double>(), 4) : "none");
  const auto& target = result.value("target_accuracy", nlohmann::json{});
  if (target.is_number())
    out += std::string{" (target "} + fixed(target.get<double>(), 4)
           + (result.value("reached_target", false) ? " reached)"
                                                    : " not reached)");
  // A simulation's seconds are virtual (troupe simulate).
  out += " after " + fixed(result.value("seconds", 0.0), 1)
         + (result.contains("simulation") ? " simulated s" : " s");
  if (result.contains("epochs") && result["epochs"].is_number())
    out += ", " + fixed(result["epochs"].get<double>(), 2) + " epochs";
  out += ", "
         + std::to_string(
             static_cast<long>(result.value("samples_per_sec", 0.0)))
         + " samples/s";
  return out;
}

int train_main(const std::vector<std::string>& args) {
  actors::detail::set_log_program("troupe train");
  train_options opts;
  option_parser parser{"troupe train"};
  try {
    add_train_options(parser, opts, args);
    if (!parser.parse(args))
      return 0;
    opts.given = parser.given();
  } catch (const usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
  return train_main_with(std::move(opts));
}

int train_main_with(train_options opts, const std::string& program) {
  // Before any thread starts: they inherit the blocked signals.
  if (!opts.stop)
    opts.stop = std::make_shared<actors::stop_request>();
  interrupt_watch watch{opts.stop, program};
  auto stop = opts.stop;
  auto status = guarded_main(program, [&] {
    auto json = opts.json;
    auto result = run_train(std::move(opts));
    // On a terminal, broken to its width.
    auto line = summary_line(result, program);
    if (isatty(STDERR_FILENO)) {
      auto columns = terminal_columns();
      line = wrap_columns(line, columns > 1 ? columns - 1 : columns);
    }
    std::cerr << line << '\n';
    if (result.contains("error"))
      std::cerr << program << ": error: " << result["error"].get<std::string>()
                << '\n';
    if (json)
      std::cout << result.dump() << std::endl;
    if (result.contains("save_error"))
      std::cerr << program << ": error: the model was not saved: "
                << result["save_error"].get<std::string>() << '\n';
    return result.contains("error") || result.contains("save_error") ? 1 : 0;
  });
  // The run's own status: a Ctrl-C that only ends the lingering dashboard
  // does not make it an interrupted run.
  auto taken = watch.signal();
  watch.job_over();
  linger_monitoring(*stop);
  return taken ? watch.exit_status(status) : status;
}

} // namespace troupe::apps

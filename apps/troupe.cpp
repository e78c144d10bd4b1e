// The `troupe` command line: one executable, one subcommand per job kind.

#include <iostream>
#include <string>
#include <vector>

#include "apps/board_command.hpp"
#include "apps/model_commands.hpp"
#include "apps/node_command.hpp"
#include "apps/simulate_command.hpp"
#include "apps/top_command.hpp"
#include "apps/train_command.hpp"

namespace {

constexpr const char* usage = R"(usage: troupe <command> [--name=value ...]

Asynchronous distributed training with actors.

commands:
  train     train a model (see troupe train --help); with --listen the
            roles run on nodes that join
  simulate  run a train job's actors on a simulated cluster in virtual
            time (troupe simulate --help: the cluster's flags)
  node      host a distributed job's roles (troupe node --join=HOST:PORT)
  launch    run a distributed job: the coordinator here and its nodes as
            local processes (--local=M) or over ssh (--hosts=FILE)
  top       watch a running job's actors in the terminal
            (troupe top --connect=HOST:PORT, the job's --monitor address)
  board     compare runs in a browser, finished and running
            (troupe board --logdir=DIR, their --report=DIR/NAME)
  eval      evaluate a saved model on a test set
            (troupe eval --model=FILE [--data=...]; train --save writes it)
  predict   print a saved model's predictions
            (troupe predict --model=FILE --input=FILE|- [--top=K])
  version   print the version

Every command prints progress on stderr and, with --json, one JSON object on
the last line of stdout. Exit status: 0 ok, 1 runtime error, 2 usage error;
troupe train stopped by Ctrl-C (SIGINT) or SIGTERM: 130 or 143, once the
final model and JSON are written (a second signal exits at once).
)";

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h"
      || args[0] == "help") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  auto command = args[0];
  args.erase(args.begin());
  if (command == "train")
    return troupe::apps::train_main(args);
  if (command == "simulate")
    return troupe::apps::simulate_main(args);
  if (command == "node")
    return troupe::apps::node_main(args);
  if (command == "launch")
    return troupe::apps::launch_main(args);
  if (command == "top")
    return troupe::apps::top_main(args);
  if (command == "board")
    return troupe::apps::board_main(args);
  if (command == "eval")
    return troupe::apps::eval_main(args);
  if (command == "predict")
    return troupe::apps::predict_main(args);
  if (command == "version" || command == "--version") {
    std::cout << "troupe " << TROUPE_VERSION << '\n';
    return 0;
  }
  std::cerr << "troupe: unknown command '" << command
            << "' (commands: train, simulate, node, launch, top, board, eval, "
               "predict, version; "
               "see troupe --help)\n";
  return 2;
}

#include "apps/board_command.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include "actors/detail/log.hpp"
#include "apps/cli.hpp"
#include "net/board.hpp"
#include "net/http_server.hpp"
#include "net/system.hpp"

namespace troupe::apps {

namespace {

std::atomic<bool> stopped{false};

extern "C" void on_board_signal(int) {
  stopped = true;
}

} // namespace

int board_main(const std::vector<std::string>& args) {
  actors::detail::set_log_program("troupe board");
  std::string logdir, listen = "127.0.0.1:8766", token, token_file;
  double seconds = 0;
  option_parser p{"troupe board"};
  p.add(logdir, "logdir",
        "DIR: the runs to compare, each a `troupe train --report=DIR/NAME` "
        "(finished or running)")
      .add(listen, "listen",
           "HOST:PORT to serve the board on (default 127.0.0.1:8766; port 0: "
           "any free port)")
      .add(token, "token",
           "require `Authorization: Bearer TOKEN` (open the "
           "page as /#token=TOKEN)")
      .add(token_file, "token-file", "read the token from a file")
      .add(seconds, "seconds",
           "stop after this many seconds (default: at "
           "Ctrl-C)");
  return guarded_main("troupe board", [&] {
    if (!p.parse(args))
      return 0;
    if (logdir.empty())
      throw usage_error("troupe board: --logdir=DIR is required (the "
                        "directory of the runs' --report directories)");
    std::error_code ec;
    if (!std::filesystem::is_directory(logdir, ec))
      throw usage_error("troupe board: --logdir=" + logdir
                        + ": not a directory");
    if (!(seconds >= 0))
      throw usage_error("troupe board: --seconds must be >= 0");
    net::http_options ho;
    try {
      ho.listen = net::parse_endpoint(listen, "--listen");
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string{"troupe board: "} + e.what());
    }
    if (!token_file.empty())
      token = net::read_token_file(token_file);
    ho.token = token;
    ho.public_paths = net::run_board::public_paths();
    net::run_board board{logdir};
    auto runs = board.runs()["runs"].size();
    std::signal(SIGINT, on_board_signal);
    std::signal(SIGTERM, on_board_signal);
    net::http_server server{ho, board.routes()};
    std::cerr << "troupe board: " << runs << (runs == 1 ? " run" : " runs")
              << " under " << logdir << " at http://" << ho.listen.host << ':'
              << server.port() << "/ (Ctrl-C stops it)" << std::endl;
    auto end
        = std::chrono::steady_clock::now()
          + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(seconds > 0 ? seconds : 1e9));
    while (!stopped && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
    std::cerr << "troupe board: stopped" << std::endl;
    return 0;
  });
}

} // namespace troupe::apps

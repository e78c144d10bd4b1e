#include "net/http_server.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace troupe::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

struct http_server::impl : std::enable_shared_from_this<impl> {
  http_options opts;
  std::map<std::string, http_handler> routes;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::promise<void> finished; // set when io.run() returns
  std::future<void> done;
  std::atomic<std::uint32_t> connections{0};
  struct session;
  std::vector<std::weak_ptr<session>> sessions; // touched on the io thread
  mutable std::mutex mtx;
  http_counters counts;

  void count(std::uint64_t http_counters::*field) {
    std::lock_guard<std::mutex> guard{mtx};
    ++(counts.*field);
  }

  struct session : std::enable_shared_from_this<session> {
    std::shared_ptr<impl> server;
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    std::optional<http::request_parser<http::empty_body>> parser;
    http::response<http::string_body> response;

    session(std::shared_ptr<impl> s, tcp::socket socket)
        : server(std::move(s)), stream(std::move(socket)) {}

    ~session() {
      --server->connections;
    }

    void read() {
      parser.emplace();
      parser->header_limit(server->opts.max_header_bytes);
      parser->body_limit(0);
      stream.expires_after(server->opts.timeout);
      http::async_read(
          stream, buffer, *parser,
          [self = shared_from_this()](beast::error_code ec, std::size_t) {
            self->on_read(ec);
          });
    }

    void on_read(beast::error_code ec) {
      if (ec == http::error::end_of_stream || ec == asio::error::eof
          || ec == asio::error::connection_reset
          || ec == asio::error::operation_aborted)
        return close();
      if (ec == beast::error::timeout) {
        server->count(&http_counters::timed_out);
        return close();
      }
      if (ec) {
        server->count(&http_counters::bad_requests);
        return reply(400, "bad request: " + ec.message() + "\n", false);
      }
      server->count(&http_counters::requests);
      const auto& req = parser->get();
      bool keep = req.keep_alive();
      std::string target{req.target().data(), req.target().size()};
      auto q = target.find('?');
      auto path = target.substr(0, q);
      if (!server->opts.token.empty()
          && server->opts.public_paths.count(path) == 0) {
        auto auth = req[http::field::authorization];
        std::string given{auth.data(), auth.size()};
        if (given.rfind("Bearer ", 0) != 0
            || !tokens_equal(given.substr(7), server->opts.token)) {
          server->count(&http_counters::unauthorized);
          response.set(http::field::www_authenticate, "Bearer");
          return reply(401, "a bearer token is required\n", keep);
        }
      }
      if (req.method() != http::verb::get && req.method() != http::verb::head)
        return reply(405, "only GET\n", keep);
      auto query
          = q == std::string::npos ? std::string{} : target.substr(q + 1);
      auto route = server->routes.find(path);
      if (route == server->routes.end())
        return reply(404, "no such page: " + path + "\n", keep);
      http_response out;
      try {
        out = route->second(query);
      } catch (const std::exception& e) {
        out = {500, "text/plain; charset=utf-8",
               std::string{"error: "} + e.what() + "\n"};
      }
      response.set(http::field::content_type, out.content_type);
      reply(out.status, std::move(out.body), keep,
            req.method() == http::verb::head);
    }

    void reply(unsigned status, std::string body, bool keep,
               bool head = false) {
      response.version(11);
      response.result(status);
      response.set(http::field::server, "troupe");
      if (response[http::field::content_type].empty())
        response.set(http::field::content_type, "text/plain; charset=utf-8");
      response.keep_alive(keep);
      response.body() = head ? std::string{} : std::move(body);
      response.prepare_payload();
      stream.expires_after(server->opts.timeout);
      http::async_write(
          stream, response,
          [self = shared_from_this(), keep](beast::error_code ec, std::size_t) {
            if (ec || !keep)
              return self->close();
            self->response = {};
            self->read();
          });
    }

    void close() {
      beast::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream.close();
    }
  };

  void accept() {
    acceptor.async_accept(
        [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
          if (ec == asio::error::operation_aborted)
            return;
          if (!ec) {
            if (self->connections >= self->opts.max_connections) {
              self->count(&http_counters::refused);
              beast::error_code ignored;
              socket.close(ignored);
            } else {
              ++self->connections;
              auto s = std::make_shared<session>(self, std::move(socket));
              auto& all = self->sessions;
              all.erase(std::remove_if(all.begin(), all.end(),
                                       [](auto& w) { return w.expired(); }),
                        all.end());
              all.push_back(s);
              s->read();
            }
          }
          self->accept();
        });
  }
};

http_server::http_server(http_options opts,
                         std::map<std::string, http_handler> routes)
    : impl_(std::make_shared<impl>()) {
  impl_->opts = std::move(opts);
  impl_->routes = std::move(routes);
  const auto& at = impl_->opts.listen;
  try {
    tcp::resolver resolver{impl_->io};
    tcp::endpoint ep
        = *resolver.resolve(at.host, std::to_string(at.port)).begin();
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(tcp::acceptor::reuse_address{true});
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot serve HTTP on " + at.host + ":"
                             + std::to_string(at.port) + ": " + e.what());
  }
  impl_->accept();
  impl_->done = impl_->finished.get_future();
  impl_->thread = std::thread{[p = impl_.get()] {
    p->io.run();
    p->finished.set_value();
  }};
}

http_server::~http_server() {
  // Close the listening socket and every open connection on the io thread,
  // so the pending handlers finish (releasing the server) and the port stops
  // accepting at once; stop the loop outright if something lingers.
  asio::post(impl_->io, [p = impl_.get()] {
    beast::error_code ignored;
    p->acceptor.close(ignored);
    for (auto& w : p->sessions)
      if (auto s = w.lock())
        s->close();
  });
  if (impl_->done.wait_for(std::chrono::seconds{2})
      != std::future_status::ready)
    impl_->io.stop();
  if (impl_->thread.joinable())
    impl_->thread.join();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

std::uint16_t http_server::port() const noexcept {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

http_counters http_server::counters() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->counts;
}

} // namespace troupe::net

#include "net/guard.hpp"

#include <array>
#include <chrono>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "actors/detail/log.hpp"

namespace troupe::net {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

std::uint32_t read_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16)
         | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// BASP 0.17 operations: server_handshake 0 ... heartbeat 6.
constexpr unsigned char client_handshake = 1;
constexpr unsigned char last_operation = 6;

} // namespace

std::string basp_guard::check_header(const unsigned char* h, bool first,
                                     std::uint32_t max_payload) {
  if (h[0] > last_operation)
    return "unknown BASP operation " + std::to_string(h[0]);
  if (first && h[0] != client_handshake)
    return "the first frame is not a client handshake (operation "
           + std::to_string(h[0]) + ")";
  auto len = read_be32(h + 4);
  if (len > max_payload)
    return "frame payload of " + std::to_string(len) + " bytes exceeds the "
           + std::to_string(max_payload) + "-byte limit";
  return {};
}

struct basp_guard::impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::uint16_t back = 0;
  guard_options opts;
  guard_counters counters;
  std::uint32_t pending = 0;
  std::thread thread;

  struct session : std::enable_shared_from_this<session> {
    impl& g;
    tcp::socket client, server;
    asio::steady_timer deadline;
    std::array<unsigned char, header_size> header{};
    std::vector<unsigned char> up = std::vector<unsigned char>(1 << 18);
    std::vector<unsigned char> down = std::vector<unsigned char>(1 << 18);
    std::uint64_t left = 0; ///< payload bytes of the current frame
    bool first = true;
    bool closed = false;
    std::string peer;

    session(impl& guard, tcp::socket s)
        : g(guard), client(std::move(s)), server(guard.io),
          deadline(guard.io) {
      boost::system::error_code ec;
      auto ep = client.remote_endpoint(ec);
      peer = ec ? std::string{"?"}
                : ep.address().to_string() + ":" + std::to_string(ep.port());
    }

    void start() {
      ++g.pending;
      auto self = shared_from_this();
      deadline.expires_after(std::chrono::milliseconds{
          static_cast<std::int64_t>(g.opts.handshake_timeout * 1000)});
      deadline.async_wait([self](boost::system::error_code ec) {
        if (!ec && self->first) {
          ++self->g.counters.timed_out;
          actors::detail::log().warn("guard: {} sent no handshake in time",
                                     self->peer);
          self->close();
        }
      });
      server.async_connect(
          {asio::ip::address_v4::loopback(), g.back},
          [self](boost::system::error_code ec) {
            if (ec)
              return self->close();
            self->server.set_option(tcp::no_delay{true});
            self->client.set_option(tcp::no_delay{true});
            self->read_header();
            self->pump_down();
          });
    }

    void close() {
      if (closed)
        return;
      closed = true;
      if (first)
        --g.pending;
      boost::system::error_code ec;
      client.close(ec);
      server.close(ec);
      deadline.cancel();
    }

    void read_header() {
      auto self = shared_from_this();
      asio::async_read(
          client, asio::buffer(header),
          [self](boost::system::error_code ec, std::size_t) {
            if (ec)
              return self->close();
            auto why = check_header(self->header.data(), self->first,
                                    self->g.opts.max_payload);
            if (!why.empty()) {
              ++self->g.counters.refused;
              actors::detail::log().warn("guard: cut off {}: {}", self->peer,
                                         why);
              return self->close();
            }
            if (self->first) {
              self->first = false;
              --self->g.pending;
              self->deadline.cancel();
            }
            self->left = read_be32(self->header.data() + 4);
            self->g.counters.bytes_in += header_size;
            asio::async_write(self->server, asio::buffer(self->header),
                              [self](boost::system::error_code ec2,
                                     std::size_t) {
                                if (ec2)
                                  return self->close();
                                self->pump_up();
                              });
          });
    }

    void pump_up() {
      if (left == 0)
        return read_header();
      auto self = shared_from_this();
      auto n = static_cast<std::size_t>(
          std::min<std::uint64_t>(left, up.size()));
      client.async_read_some(
          asio::buffer(up.data(), n),
          [self](boost::system::error_code ec, std::size_t got) {
            if (ec)
              return self->close();
            self->left -= got;
            self->g.counters.bytes_in += got;
            asio::async_write(self->server, asio::buffer(self->up.data(), got),
                              [self](boost::system::error_code ec2,
                                     std::size_t) {
                                if (ec2)
                                  return self->close();
                                self->pump_up();
                              });
          });
    }

    void pump_down() {
      auto self = shared_from_this();
      server.async_read_some(
          asio::buffer(down), [self](boost::system::error_code ec,
                                     std::size_t got) {
            if (ec)
              return self->close();
            asio::async_write(self->client,
                              asio::buffer(self->down.data(), got),
                              [self](boost::system::error_code ec2,
                                     std::size_t) {
                                if (ec2)
                                  return self->close();
                                self->pump_down();
                              });
          });
    }
  };

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec,
                                 tcp::socket s) {
      if (ec == asio::error::operation_aborted)
        return;
      if (!ec) {
        ++counters.accepted;
        if (pending >= opts.max_pending) {
          ++counters.refused;
          boost::system::error_code ignored;
          s.close(ignored);
        } else {
          std::make_shared<session>(*this, std::move(s))->start();
        }
      }
      accept();
    });
  }
};

basp_guard::basp_guard(const endpoint& front, std::uint16_t back,
                       guard_options opts)
    : impl_(std::make_unique<impl>()) {
  impl_->back = back;
  impl_->opts = opts;
  try {
    auto host = front.host == "*" ? std::string{"0.0.0.0"} : front.host;
    tcp::resolver resolver{impl_->io};
    auto results = resolver.resolve(host, std::to_string(front.port));
    tcp::endpoint ep = *results.begin();
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(tcp::acceptor::reuse_address{true});
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot listen on " + front.host + ":"
                             + std::to_string(front.port) + ": " + e.what());
  }
  impl_->accept();
  impl_->thread = std::thread{[this] { impl_->io.run(); }};
}

basp_guard::~basp_guard() {
  impl_->io.stop();
  if (impl_->thread.joinable())
    impl_->thread.join();
}

std::uint16_t basp_guard::port() const noexcept {
  return impl_->acceptor.local_endpoint().port();
}

const guard_counters& basp_guard::counters() const noexcept {
  return impl_->counters;
}

} // namespace troupe::net

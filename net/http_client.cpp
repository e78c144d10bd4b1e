#include "net/http_client.hpp"

#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace troupe::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

http_reply http_get(const endpoint& at, const std::string& path,
                    const std::string& token,
                    std::chrono::milliseconds timeout) {
  auto where = "http://" + at.host + ":" + std::to_string(at.port) + path;
  try {
    // Asynchronous operations on one io_context, so the stream's deadline
    // covers connecting, writing and reading (blocking calls ignore it).
    asio::io_context io;
    asio::ip::tcp::resolver resolver{io};
    beast::tcp_stream stream{io};
    http::request<http::empty_body> req{http::verb::get, path, 11};
    req.set(http::field::host, at.host);
    req.set(http::field::connection, "close");
    if (!token.empty())
      req.set(http::field::authorization, "Bearer " + token);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    beast::error_code failure;
    auto fail = [&](beast::error_code ec) {
      if (ec && !failure)
        failure = ec;
      return static_cast<bool>(ec);
    };
    stream.expires_after(timeout);
    stream.async_connect(
        resolver.resolve(at.host, std::to_string(at.port)),
        [&](beast::error_code ec, const asio::ip::tcp::endpoint&) {
          if (fail(ec))
            return;
          http::async_write(stream, req,
                            [&](beast::error_code ec, std::size_t) {
                              if (fail(ec))
                                return;
                              http::async_read(stream, buffer, parser,
                                               [&](beast::error_code ec,
                                                   std::size_t) { fail(ec); });
                            });
        });
    io.run();
    if (failure)
      throw beast::system_error{failure};
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    return {parser.get().result_int(), parser.get().body()};
  } catch (const beast::system_error& e) {
    auto reason
        = e.code() == beast::error::timeout
              ? "no answer within " + std::to_string(timeout.count()) + " ms"
              : e.code().message();
    throw std::runtime_error("cannot get " + where + " (" + reason + ")");
  }
}

} // namespace troupe::net

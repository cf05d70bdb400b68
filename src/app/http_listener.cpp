#include "app/http_listener.h"

#include <stdexcept>

namespace llmwatch {
namespace {

using boost::asio::ip::tcp;

struct Connection : std::enable_shared_from_this<Connection> {
  tcp::socket socket;
  boost::asio::streambuf request;
  std::string response;
  HttpListener::Handler& handler;
  Connection(tcp::socket s, HttpListener::Handler& h) : socket(std::move(s)), handler(h) {}

  void start() {
    auto self = shared_from_this();
    request.prepare(8192);
    boost::asio::async_read_until(
        socket, request, "\r\n\r\n", [self](const boost::system::error_code& ec, std::size_t) {
          if (ec) return;
          std::istream in(&self->request);
          std::string method, path;
          in >> method >> path;
          HttpReply reply =
              method == "GET" ? self->handler(path) : HttpReply{405, "text/plain", "GET only\n"};
          const char* reason = reply.status == 200   ? "OK"
                               : reply.status == 404 ? "Not Found"
                               : reply.status == 503 ? "Service Unavailable"
                                                     : "Error";
          self->response = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason +
                           "\r\nContent-Type: " + reply.content_type +
                           "\r\nContent-Length: " + std::to_string(reply.body.size()) +
                           "\r\nConnection: close\r\n\r\n" + reply.body;
          boost::asio::async_write(self->socket, boost::asio::buffer(self->response),
                                   [self](const boost::system::error_code&, std::size_t) {
                                     boost::system::error_code ignored;
                                     self->socket.shutdown(tcp::socket::shutdown_both, ignored);
                                   });
        });
  }
};

tcp::endpoint parse_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error("--listen " + listen + ": expected ADDR:PORT");
  std::string host = listen.substr(0, colon);
  int port = std::atoi(listen.c_str() + colon + 1);
  if (port <= 0 || port > 65535) throw std::runtime_error("--listen " + listen + ": bad port");
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) throw std::runtime_error("--listen " + listen + ": bad address");
  return {addr, static_cast<unsigned short>(port)};
}

}  // namespace

HttpListener::HttpListener(boost::asio::io_context& io, const std::string& listen, Handler handler)
    : acceptor_(io), handler_(std::move(handler)) {
  auto endpoint = parse_listen(listen);
  boost::system::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(16, ec);
  if (ec) throw std::runtime_error("--listen " + listen + ": " + ec.message());
  accept();
}

void HttpListener::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec) return;  // the acceptor was closed: the daemon is stopping
    std::make_shared<Connection>(std::move(socket), handler_)->start();
    accept();
  });
}

}  // namespace llmwatch

#include "app/http_listener.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <stdexcept>

#include "util/strings.h"

namespace llmwatch {
namespace {

using boost::asio::ip::tcp;

// A client gets kMaxRequest bytes and kReadDeadline to send its request line and headers,
// and at most kMaxConnections are open at once: a slow or idle client (or a flood of them)
// can neither hold memory nor starve the daemon of file descriptors.
constexpr std::size_t kMaxRequest = 8192;
constexpr auto kReadDeadline = std::chrono::seconds(5);
constexpr int kMaxConnections = 32;
// How often an address in use is tried again.
constexpr auto kBindEvery = std::chrono::seconds(1);

}  // namespace

// What a connection shares with the listener. Connections hold it too, because one may be
// freed after the listener: pending handlers are destroyed with the io_context.
struct HttpListener::Shared {
  Handler handler;
  int open_connections = 0;  // the io_context is single-threaded
};

namespace {

struct Connection : std::enable_shared_from_this<Connection> {
  tcp::socket socket;
  boost::asio::streambuf request{kMaxRequest};
  boost::asio::steady_timer deadline;
  std::string response;
  std::shared_ptr<HttpListener::Shared> shared;
  Connection(tcp::socket s, std::shared_ptr<HttpListener::Shared> sh)
      : socket(std::move(s)), deadline(socket.get_executor()), shared(std::move(sh)) {
    ++shared->open_connections;
  }
  ~Connection() { --shared->open_connections; }

  void reply(HttpReply reply) {
    auto self = shared_from_this();
    const char* reason = reply.status == 200   ? "OK"
                         : reply.status == 404 ? "Not Found"
                         : reply.status == 405 ? "Method Not Allowed"
                         : reply.status == 431 ? "Request Header Fields Too Large"
                         : reply.status == 503 ? "Service Unavailable"
                                               : "Error";
    response = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason +
               "\r\nContent-Type: " + reply.content_type +
               "\r\nContent-Length: " + std::to_string(reply.body.size()) +
               "\r\nConnection: close\r\n\r\n" + reply.body;
    boost::asio::async_write(socket, boost::asio::buffer(response),
                             [self](const boost::system::error_code&, std::size_t) {
                               boost::system::error_code ignored;
                               self->deadline.cancel();
                               self->socket.shutdown(tcp::socket::shutdown_both, ignored);
                               self->socket.close(ignored);
                             });
  }

  void start() {
    auto self = shared_from_this();
    deadline.expires_after(kReadDeadline);
    deadline.async_wait([self](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: the request was answered
      boost::system::error_code ignored;
      self->socket.close(ignored);  // too slow: the pending read ends with an error
    });
    boost::asio::async_read_until(
        socket, request, "\r\n\r\n", [self](const boost::system::error_code& ec, std::size_t) {
          if (ec == boost::asio::error::not_found)  // the request outgrew kMaxRequest
            return self->reply({431, "text/plain", "request too large\n"});
          if (ec) return;
          self->deadline.cancel();
          std::istream in(&self->request);
          std::string method, path;
          in >> method >> path;
          if (method != "GET") return self->reply({405, "text/plain", "GET only\n"});
          try {
            self->reply(self->shared->handler(path));
          } catch (const std::exception& e) {
            self->reply({500, "text/plain", std::string("error: ") + e.what() + "\n"});
          }
        });
  }
};

tcp::endpoint parse_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error("--listen " + listen + ": expected ADDR:PORT");
  std::string host = listen.substr(0, colon);
  auto port = to_int64(listen.substr(colon + 1));  // 0: any free port
  if (!port || *port < 0 || *port > 65535)
    throw std::runtime_error("--listen " + listen + ": bad port");
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) throw std::runtime_error("--listen " + listen + ": bad address");
  return {addr, static_cast<unsigned short>(*port)};
}

}  // namespace

HttpListener::HttpListener(boost::asio::io_context& io, const std::string& listen, Handler handler)
    : listen_(listen),
      endpoint_(parse_listen(listen)),
      acceptor_(io),
      retry_(io),
      shared_(std::make_shared<Shared>(Shared{std::move(handler)})) {
  if (bind()) return;
  spdlog::warn(
      "--listen {}: address in use (an llmwatch before this one still closing?); supervising "
      "without /metrics and /healthz until it is free, trying every {} s",
      listen_, kBindEvery.count());
  bind_later();
}

bool HttpListener::bind() {
  boost::system::error_code ec;
  acceptor_.open(endpoint_.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint_, ec);
  if (!ec) acceptor_.listen(16, ec);
  if (!ec) {
    accept();
    return true;
  }
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  if (ec == boost::asio::error::address_in_use) return false;
  throw std::runtime_error("--listen " + listen_ + ": " + ec.message());
}

void HttpListener::bind_later() {
  retry_.expires_after(kBindEvery);
  retry_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // stopping
    try {
      if (!bind()) return bind_later();
      spdlog::info("--listen {}: the address is free now; serving /metrics and /healthz", listen_);
    } catch (const std::exception& e) {
      spdlog::error("{}; not serving /metrics and /healthz", e.what());
    }
  });
}

void HttpListener::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;  // stopping
    if (ec) {
      // Out of file descriptors (EMFILE) and the like: try again shortly, never give up.
      retry_.expires_after(std::chrono::milliseconds(200));
      retry_.async_wait([this](const boost::system::error_code& e) {
        if (!e) accept();
      });
      return;
    }
    if (shared_->open_connections >= kMaxConnections) {
      boost::system::error_code ignored;
      socket.close(ignored);  // over the cap: refused at once
    } else {
      std::make_shared<Connection>(std::move(socket), shared_)->start();
    }
    accept();
  });
}

HttpListener::~HttpListener() = default;

}  // namespace llmwatch

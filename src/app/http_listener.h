#pragma once
// The daemon's small HTTP endpoint (`daemon --listen ADDR:PORT`): GET /metrics (Prometheus
// text format, rendered from the state store) and GET /healthz (200 while cycles are
// recent, 503 when the last one is older than three intervals). Runs on the daemon's
// io_context, between cycles; one short request per connection, with a read deadline, a
// request-size limit and a connection cap.
#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <string>

namespace llmwatch {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpListener {
 public:
  using Handler = std::function<HttpReply(const std::string& path)>;
  // listen: "127.0.0.1:9464" or ":9464". Throws std::runtime_error with the address when it
  // is malformed or cannot be bound (no such local address, a port not allowed). An address
  // in use is taken later instead: a daemon started again in its predecessor's place, whose
  // last process still holds the port for a moment (or longer, blocked in the kernel on a hung
  // mount), supervises from its first cycle and serves from the moment the port is free.
  HttpListener(boost::asio::io_context& io, const std::string& listen, Handler handler);
  ~HttpListener();
  bool listening() const { return acceptor_.is_open(); }
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  struct Shared;  // the handler and the connection count, shared with open connections

 private:
  bool bind();  // false: the address is in use
  void bind_later();
  void accept();
  std::string listen_;
  boost::asio::ip::tcp::endpoint endpoint_;
  boost::asio::ip::tcp::acceptor acceptor_;
  // Accept again after a transient failure (EMFILE); bind again while the address is in use.
  boost::asio::steady_timer retry_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace llmwatch

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
  // listen: "127.0.0.1:9464" or ":9464". Throws std::runtime_error with the address on failure.
  HttpListener(boost::asio::io_context& io, const std::string& listen, Handler handler);
  ~HttpListener();
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  struct Shared;  // the handler and the connection count, shared with open connections

 private:
  void accept();
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // accept again after a transient failure (EMFILE)
  std::shared_ptr<Shared> shared_;
};

}  // namespace llmwatch

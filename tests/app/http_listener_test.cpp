// The /metrics listener against hostile clients (#13): it must outlive them all.
#include "app/http_listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace llmwatch {
namespace {

struct Served {
  boost::asio::io_context io;
  std::unique_ptr<HttpListener> listener;
  std::thread thread;
  int requests = 0;
  Served() {
    listener = std::make_unique<HttpListener>(io, "127.0.0.1:0", [this](const std::string& p) {
      ++requests;
      return HttpReply{200, "text/plain", "path " + p + "\n"};
    });
    thread = std::thread([this] {
      auto guard = boost::asio::make_work_guard(io);
      io.run();
    });
  }
  ~Served() {
    io.stop();
    thread.join();
  }
  int connect() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};  // a bound on every read below: a broken server fails, never hangs
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(listener->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }
  static std::string exchange(int fd, const std::string& request) {
    if (!request.empty()) (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      out.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return out;
  }
};

TEST(HttpListener, AnswersAGet) {
  Served s;
  auto out = Served::exchange(s.connect(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK", 0), 0u) << out;
  EXPECT_NE(out.find("path /metrics"), std::string::npos);
}

// The defect: no request-size limit; a client could make the daemon buffer without end.
TEST(HttpListener, AnOversizedRequestIsRefused) {
  Served s;
  std::string huge = "GET / HTTP/1.1\r\nX-Junk: " + std::string(20000, 'a') + "\r\n\r\n";
  auto out = Served::exchange(s.connect(), huge);
  EXPECT_EQ(out.rfind("HTTP/1.1 431", 0), 0u) << out.substr(0, 80);
  EXPECT_EQ(s.requests, 0);
}

// The defects: no read deadline and no connection cap. Idle clients are dropped at the
// deadline; past the cap a new client is closed without an answer; and the listener serves
// again once they are gone.
TEST(HttpListener, IdleClientsAreCappedAndDroppedAndServiceResumes) {
  Served s;
  std::vector<int> idle;
  for (int i = 0; i < 32; ++i) idle.push_back(s.connect());
  auto refused = Served::exchange(s.connect(), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(refused.find("HTTP/1.1"), std::string::npos) << refused;
  for (int fd : idle) EXPECT_EQ(Served::exchange(fd, ""), "");  // closed by the deadline
  auto out = Served::exchange(s.connect(), "GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK", 0), 0u) << out;
}

// The defect (found by the ASan pass): a connection still open when the listener is
// destroyed, and freed only later with the io_context, counted itself out in the freed
// listener. The daemon destroys the two in that order; so does this test.
TEST(HttpListener, AConnectionMayOutliveTheListener) {
  boost::asio::io_context io;
  auto listener = std::make_unique<HttpListener>(io, "127.0.0.1:0",
                                                 [](const std::string&) { return HttpReply{}; });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(listener->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(io.run_one(), 1u);  // the accept: the connection now waits for its request
  listener.reset();
  io.stop();
  ::close(fd);
}  // io is destroyed here, and with it the waiting connection

// The defect, found by the chaos soak: a daemon started again in a killed one's place, while the
// old one's last process still held the port, exited with "Address already in use" and
// supervised nothing until it was started again. The address in use is now taken when it is
// free; a malformed one or one that is no local address still fails at once.
TEST(HttpListener, AnAddressInUseIsTakenOnceItIsFree) {
  boost::asio::io_context io;
  auto holder = std::make_unique<boost::asio::ip::tcp::acceptor>(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const std::string listen = "127.0.0.1:" + std::to_string(holder->local_endpoint().port());
  std::unique_ptr<HttpListener> listener;
  ASSERT_NO_THROW(listener = std::make_unique<HttpListener>(io, listen, [](const std::string&) {
                    return HttpReply{200, "text/plain", "ok\n"};
                  }));
  EXPECT_FALSE(listener->listening());
  holder.reset();  // the predecessor's process ends
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!listener->listening() && std::chrono::steady_clock::now() < deadline)
    io.run_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(listener->listening()) << "not listening 30 s after the address was free";
  EXPECT_EQ(listen, "127.0.0.1:" + std::to_string(listener->port()));
  EXPECT_THROW(HttpListener(io, "127.0.0.1:99999", [](const std::string&) { return HttpReply{}; }),
               std::runtime_error);
  EXPECT_THROW(HttpListener(io, "192.0.2.1:0", [](const std::string&) { return HttpReply{}; }),
               std::runtime_error);  // not an address of this host
  listener.reset();
}

}  // namespace
}  // namespace llmwatch

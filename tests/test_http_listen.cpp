// The server's listening socket queues a burst of connects: cpp-httplib 0.11 listens with a
// backlog of 5, which a burst of clients overflows while the accept thread waits for a core.
// The server is bound but never accepts here (listen() is not called), so exactly the kernel's
// queue holds the connections: with a backlog of 5 the 7th handshake never completes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "inferlab/http/openai_server.hpp"

using namespace inferlab;

TEST_CASE("the server's socket queues a burst of 64 connects before any is accepted",
          "[unit][server]") {
  constexpr int kClients = 64;
  static_assert(kClients <= kListenBacklog);
  ServerConfig config;
  config.port = 0;
  OpenAIServer server(config);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<pollfd> fds;
  for (int i = 0; i < kClients; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    REQUIRE(fd >= 0);
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    REQUIRE((rc == 0 || errno == EINPROGRESS));
    fds.push_back({fd, POLLOUT, 0});
  }
  // A queued connection completes its handshake at once; a dropped SYN leaves it pending (the
  // kernel retries after 1, 3, 7 s... and the queue stays full). The deadline only bounds a
  // failing run.
  int connected = 0;
  std::vector<pollfd> pending = fds;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
    if (::poll(pending.data(), pending.size(), 1000) < 0) break;
    std::vector<pollfd> still;
    for (const pollfd& p : pending) {
      if (!(p.revents & (POLLOUT | POLLERR | POLLHUP))) {
        still.push_back({p.fd, POLLOUT, 0});
        continue;
      }
      int error = -1;
      socklen_t size = sizeof error;
      ::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &error, &size);
      connected += error == 0;
    }
    pending = std::move(still);
  }
  for (const pollfd& p : fds) ::close(p.fd);
  CHECK(connected == kClients);
  server.stop();
}
